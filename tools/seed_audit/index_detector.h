// IndexDetector: which ranks visit which sample indices in each epoch.
//   rank_batch_duplicate: an index visited by a rank other than the first one that
//     visited it in the epoch, more often than DistributedSampler's padding explains
//     (at most world_size - 1 such repeats an epoch, world_size = ranks seen).
//   coverage (with a dataset size N): indices of [0, N) missing from an epoch beyond
//     `allowed_missing`, or more repeats than padding to a multiple of the world size
//     explains (R * ceil(N / R) - N).
// Memory: per epoch, 2 bytes per index (the first rank to visit it), in pages of
// 4096 indices allocated when first touched, so dense dataset indices cost 2 bytes
// each. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "tools/seed_audit/finding_tally.h"

namespace seedloader::audit {

class IndexDetector {
 public:
  // dataset_size: check coverage against [0, N) when given.
  IndexDetector(std::optional<std::uint64_t> dataset_size, std::uint64_t allowed_missing);
  IndexDetector(const IndexDetector&) = delete;
  IndexDetector& operator=(const IndexDetector&) = delete;

  // REQUIRES: r.rank <= kMaxRank, r.index <= kMaxIndex. Throws DataError when a
  // dataset size was given and r.index is not below it.
  void add(const SampleRecord& r);
  void report(Report& out) const;
  std::uint64_t bytes() const;

 private:
  static constexpr unsigned kPageBits = 12;
  struct Epoch {
    std::vector<std::unique_ptr<std::uint16_t[]>> pages;  // first rank + 1; 0 unseen
    std::uint64_t total = 0;
    std::uint64_t distinct = 0;
    std::uint64_t cross_rank = 0;
    std::vector<bool> ranks;
    std::uint32_t num_ranks = 0;
    std::vector<Example> cross_examples;
    std::vector<Example> repeat_examples;
  };
  Epoch& epoch(std::uint32_t e);
  bool seen(const Epoch& ep, std::uint64_t index) const;

  std::optional<std::uint64_t> dataset_size_;
  std::uint64_t allowed_missing_;
  std::map<std::uint32_t, Epoch> epochs_;
  Epoch* last_ = nullptr;
  std::uint32_t last_epoch_ = 0;
};

}  // namespace seedloader::audit
