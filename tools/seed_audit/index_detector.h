// IndexDetector: which runs and ranks visit which sample indices in each epoch.
// A trace may span several runs of one job (a restart, perhaps at another world
// size, continues an epoch another run began); an epoch's samples are counted over
// all its runs. Padding repeats the first indices of an epoch's order so that its
// length is a multiple of `pad_multiple` (the world size under DistributedSampler,
// the default: the ranks a run shows in the epoch; the global batch under the
// elastic partition): P = m * ceil(N / m) - N repeats, the largest over the
// epoch's runs.
//   rank_batch_duplicate: an index visited by a rank other than the first one of
//     its run that visited it in the epoch, more often than padding explains (at
//     most m - 1 such repeats per run and epoch).
//   resume_duplicate: an index visited again by a later run of the epoch than the
//     first, when the epoch repeats more indices than P (without a dataset size:
//     more cross-run repeats than m - 1).
//   coverage (with a dataset size N): repeats within runs beyond P that the
//     cross-run repeats do not account for; and, in a single-run trace, indices of
//     [0, N) missing from an epoch beyond `allowed_missing`.
//   resume_gap (with N, in a trace of more than one run): indices of [0, N)
//     missing from an epoch beyond `allowed_missing`.
// Samples a run declared skipped (SampleRecord::skipped) are reported as
// declared_skip (information), once per epoch and index, whether or not the epoch
// also trains that index elsewhere (padding); an epoch's missing count leaves out
// the declared indices it did not train.
// With one run and no pad_multiple this is exactly the single-run audit.
// A mixture source's detector (`source_epochs`) sees its samples by source epoch:
// nothing is padded, so every repeat within a source epoch is a finding with or
// without a size (across ranks rank_batch_duplicate, across runs
// resume_duplicate, else coverage), and the last source epoch of the trace may be
// partial, so only the epochs before it are checked for missing indices.
// Memory: per epoch, 2 bytes per index (the first (run, rank) pair to visit it),
// in pages of 4096 indices allocated when first touched, so dense dataset indices
// cost 2 bytes each. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tools/seed_audit/finding_tally.h"

namespace seedloader::audit {

class IndexDetector {
 public:
  // dataset_size: check coverage against [0, N) when given. pad_multiple: what an
  // epoch's order is padded to a multiple of; unset: each run's ranks.
  IndexDetector(std::optional<std::uint64_t> dataset_size, std::uint64_t allowed_missing,
                std::optional<std::uint64_t> pad_multiple = std::nullopt,
                bool source_epochs = false);
  IndexDetector(const IndexDetector&) = delete;
  IndexDetector& operator=(const IndexDetector&) = delete;

  // REQUIRES: r.rank <= kMaxRank, r.index <= kMaxIndex. Throws DataError when a
  // dataset size was given and r.index is not below it, or when the trace holds
  // more (run, rank) pairs than the 2-byte page entries can name.
  void add(const SampleRecord& r);
  // A declared skip (r.skipped). Throws DataError as add() does.
  void declare(const SampleRecord& r);
  void report(Report& out) const;
  std::uint64_t bytes() const;

 private:
  static constexpr unsigned kPageBits = 12;
  // One run's ranks in one epoch.
  struct RunShare {
    std::vector<bool> ranks;
    std::uint32_t num_ranks = 0;
    std::uint64_t cross_rank = 0;
    std::vector<Example> cross_examples;
  };
  struct Epoch {
    std::vector<std::unique_ptr<std::uint16_t[]>> pages;  // first visitor + 1; 0 unseen
    std::uint64_t total = 0;
    std::uint64_t distinct = 0;
    std::map<std::uint32_t, RunShare> runs;
    std::uint64_t cross_run = 0;
    std::vector<Example> cross_run_examples;
    std::vector<Example> repeat_examples;  // within a run
    std::set<std::uint64_t> declared;      // indices declared skipped
  };
  Epoch& epoch(std::uint32_t e);
  bool seen(const Epoch& ep, std::uint64_t index) const;
  // Indices of `ep` declared skipped and not visited.
  std::uint64_t declared_unseen(const Epoch& ep) const;
  std::uint16_t visitor(const SampleRecord& r);
  // The padding multiple for a run that shows `ranks` ranks in an epoch.
  std::uint64_t multiple(std::uint32_t ranks) const;
  void report_missing(std::uint32_t e, const Epoch& ep, FindingTally& tally) const;
  void check_index(const SampleRecord& r) const;

  std::optional<std::uint64_t> dataset_size_;
  std::uint64_t allowed_missing_;
  std::optional<std::uint64_t> pad_multiple_;
  bool source_epochs_ = false;
  std::map<std::uint32_t, Epoch> epochs_;
  Epoch* last_ = nullptr;
  std::uint32_t last_epoch_ = 0;
  // Dense ids of (run, rank) pairs, as the pages store them.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> visitors_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint16_t> visitor_ids_;
  std::uint16_t last_visitor_ = 0;
  std::set<std::uint32_t> runs_;
  FindingTally declared_;
};

}  // namespace seedloader::audit
