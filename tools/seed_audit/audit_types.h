// The audit's vocabulary: one per-sample record as a loader reports it, and the
// findings the detectors produce. Plain values; no ownership beyond their members.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seedloader::audit {

// One sample as the loader produced it. `rng` fingerprints the random state in use
// when the sample started (equal exactly when the states are equal).
struct SampleRecord {
  // Which run of the training job produced it: 0, 1, ... one per restart.
  std::uint32_t run = 0;
  std::uint32_t rank = 0;
  std::uint32_t epoch = 0;
  std::uint32_t worker = 0;
  std::uint64_t batch = 0;
  std::uint64_t index = 0;
  std::uint64_t rng = 0;
  // False when the sample drew no random numbers: it then has no state to repeat
  // (its successor starts from the same one) and only the index findings see it.
  bool has_rng = true;
  // A sample the run declared skipped (its step or the sample itself; "skipped":
  // true in a trace): not trained, so only where it would have been is known. The
  // audit counts it as declared_skip, information rather than a finding.
  bool skipped = false;
  std::optional<std::uint64_t> content;  // hash of the produced sample, if recorded
  std::string_view aug;                  // drawn parameters as given; may be empty
  // A mixture's sample ("source", "source_epoch" in a trace): its source's name,
  // the source's epoch, and `index` within that source. Empty: not a mixture's.
  std::string source;
  std::uint32_t source_epoch = 0;
};

// Limits of the compact per-state and per-index tables (see auditor.h).
inline constexpr std::uint64_t kMaxRank = 65534;
inline constexpr std::uint64_t kMaxIndex = 0xFFFFFFFEull;
inline constexpr std::uint64_t kMaxEpoch = 0xFFFFFFFEull;
inline constexpr std::uint64_t kMaxWorker = 0xFFFFFFFEull;
inline constexpr std::uint64_t kMaxRun = 65534;

enum class FindingKind {
  kWorkerRngDuplicate,
  kEpochRngRepeat,
  kRankRngDuplicate,
  kSampleRngRepeat,
  kRankBatchDuplicate,
  kEpochOrderRepeat,
  kCoverage,
  kResumeDuplicate,
  kResumeGap,
  kContentRepeat,       // one content trained at two places of an epoch (streams)
  kOrderMismatch,       // trace --expect: a step that is not the configuration's
  kMixtureComposition,  // trace --mixture: a step's sources off the weights
  kDeclaredSkip,        // information, not a finding: samples the run declared skipped
};

// The finding's name in reports ("worker_rng_duplicate", ...).
const char* finding_name(FindingKind kind);
// One sentence: the likely cause and the fix.
const char* finding_hint(FindingKind kind);

// Where a sample sits; fields a finding cannot name (a missing sample has no rank,
// worker or batch) are empty.
struct SamplePlace {
  std::optional<std::uint32_t> rank;
  std::optional<std::uint32_t> epoch;
  std::optional<std::uint32_t> worker;
  std::optional<std::uint64_t> batch;
  std::optional<std::uint64_t> index;
  std::optional<std::uint32_t> run;  // named only by the findings across runs
  // A mixture's sample: its source, `epoch` then being the source's epoch.
  std::optional<std::string> source;
};

struct Example {
  SamplePlace sample;
  std::optional<SamplePlace> other;  // the earlier sample it repeats, when known
  std::string note;                  // e.g. "missing", "seen 3 times"
  std::string aug;                   // the sample's drawn parameters, when recorded
};

struct Finding {
  FindingKind kind;
  std::uint64_t count = 0;  // samples (or epochs, for epoch_order_repeat) affected
  std::vector<Example> examples;
};

struct Report {
  std::uint64_t samples = 0;
  std::vector<Finding> findings;  // in FindingKind order; only kinds with count > 0
  // What the run declared rather than did wrong (kDeclaredSkip); a report with
  // information and no findings is clean.
  std::vector<Finding> information;
  bool clean() const { return findings.empty(); }
};

}  // namespace seedloader::audit
