// OrderDetector: epoch_order_repeat — a rank visits its samples in the same
// shuffled order as in an earlier epoch (the sampler's epoch was never advanced,
// e.g. DistributedSampler.set_epoch forgotten). An epoch's order is summarised by
// a sum of hashes of (batch, index) pairs, so it does not depend on how the lines
// of different workers interleave. Unshuffled loaders repeat their order by
// design and are not reported. An order counts as shuffled when its workers saw an
// index below their previous one at least twice: DistributedSampler's padding
// wraps around to the start once, at a rank's last sample. Memory: a few words per (rank,
// epoch) and per (rank, epoch, worker). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>

#include "tools/seed_audit/finding_tally.h"
#include "tools/seed_audit/owner_table.h"

namespace seedloader::audit {

class OrderDetector {
 public:
  // `owner` is r's id in `owners`; the detector keeps its per-worker state there.
  void add(const SampleRecord& r, std::uint32_t owner, OwnerTable& owners);
  void report(Report& out, const OwnerTable& owners) const;

 private:
  struct EpochOrder {
    std::uint64_t sum = 0;
    std::uint64_t samples = 0;
    SamplePlace first;  // the sample of the lowest batch seen first
  };
  static std::uint64_t key(std::uint32_t rank, std::uint32_t epoch) {
    return (std::uint64_t{rank} << 32) | epoch;
  }

  std::map<std::uint64_t, EpochOrder> orders_;  // sorted by (rank, epoch)
  EpochOrder* last_ = nullptr;
  std::uint64_t last_key_ = 0;
};

}  // namespace seedloader::audit
