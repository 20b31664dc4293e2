// StateDetector: finds random states used by more than one sample. Each sample is
// compared with the first sample that used its state (its fingerprint taken when
// the sample started) and counted once, under the nearest relation:
//   different rank                  -> rank_rng_duplicate  (rank not in the seed)
//   same rank, different epoch      -> epoch_rng_repeat    (not reseeded per epoch)
//   same rank and epoch, other worker -> worker_rng_duplicate (the fork bug)
//   same worker, epoch and rank     -> sample_rng_repeat   (reseeded per sample
//                                      with a constant)
// A repeat between samples of the same (epoch, index) is not a fault: a per-sample
// stream is a function of (epoch, index), and an index that appears twice in an
// epoch (DistributedSampler padding) is the index finding's business.
// Memory: one FingerprintTable slot per distinct state. Not thread-safe.
#pragma once

#include "tools/seed_audit/finding_tally.h"
#include "tools/seed_audit/fingerprint_table.h"
#include "tools/seed_audit/owner_table.h"

namespace seedloader::audit {

class StateDetector {
 public:
  // REQUIRES: r.index <= kMaxIndex; `owner` is r's id in `owners`.
  void add(const SampleRecord& r, std::uint32_t owner, const OwnerTable& owners);
  void report(Report& out) const;
  std::uint64_t bytes() const { return table_.bytes(); }

 private:
  FingerprintTable table_;
  FindingTally worker_, epoch_, rank_, sample_;
};

}  // namespace seedloader::audit
