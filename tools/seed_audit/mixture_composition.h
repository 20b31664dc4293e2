// The composition of a mixture's global steps against its schedule: for a trace of
// a mixture's samples (SampleRecord::source), each source's count in the steps of
// a schedule segment, counted from the segment's first step the trace holds, must
// stay strictly within one sample of G times its weights' integral over those steps
// (within two when the trace starts inside the segment, whose first counts it does
// not know). A loader that draws by weight in any way that holds the weights
// passes; seedloader's allocation always does. Step s of a trace line is
// epoch x K + batch, K = ceil(samples_per_epoch / G). A step several runs trained
// (a restart from an earlier checkpoint) counts as the latest run trained it. A
// step missing from the trace, or not holding G samples (a trace of some ranks
// only), ends the check of its segment. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "seedloader/mixture.h"
#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

struct MixtureExpectation {
  std::vector<MixtureSegment> history;
  std::uint64_t global_batch = 1;
  std::uint64_t steps_per_epoch = 1;
};

// The expectation from a mixture state (state_dict()["mixture"], ddp-train's
// checkpoint metadata "mixture": its "history" and "samples_per_epoch") and the
// run's global batch G. Throws DataError naming `where`, ConfigError for G = 0.
MixtureExpectation mixture_expectation(const std::string& where, const std::string& state,
                                       std::uint64_t global_batch);

class CompositionDetector {
 public:
  explicit CompositionDetector(MixtureExpectation expected);
  // A sample composed into its step (trained, or declared skipped); ignored
  // unless it is a mixture's.
  void add(const SampleRecord& r);
  // mixture_composition: one count per (step, source) off its weights.
  void report(Report& out) const;

 private:
  MixtureExpectation expected_;
  // Per step, per run, each source's samples.
  std::map<std::uint64_t, std::map<std::uint32_t, std::map<std::string, std::uint64_t>>>
      steps_;
};

}  // namespace seedloader::audit
