// StateDetector: finds random states used by more than one sample. Each sample is
// compared with the first sample that used its state (its fingerprint taken when
// the sample started) and counted once, under the nearest relation:
//   different rank                  -> rank_rng_duplicate  (rank not in the seed)
//   same rank, different epoch      -> epoch_rng_repeat    (not reseeded per epoch)
//   same rank and epoch, other worker -> worker_rng_duplicate (the fork bug)
//   same worker, epoch and rank     -> sample_rng_repeat   (reseeded per sample
//                                      with a constant)
// A repeat between samples of the same (epoch, index) is not a fault by itself: a
// per-sample stream is a function of (epoch, index), and DistributedSampler
// padding makes at most (ranks - 1) indices of an epoch appear on two ranks. More
// cross-rank repeats of that kind than padding explains mean the ranks read the
// same indices with the same states (rank not in the seed *and* no sharding), and
// they are reported as rank_rng_duplicate. Same-(epoch, index) repeats between
// runs of a restarted job are left to IndexDetector (resume_duplicate).
// Memory: one FingerprintTable slot per distinct state. Not thread-safe.
#pragma once

#include <map>
#include <optional>

#include "tools/seed_audit/finding_tally.h"
#include "tools/seed_audit/fingerprint_table.h"
#include "tools/seed_audit/owner_table.h"

namespace seedloader::audit {

class StateDetector {
 public:
  // pad_multiple: what an epoch's order is padded to a multiple of (the elastic
  // partition's global batch: up to pad_multiple - 1 padded indices); unset: the
  // ranks seen, as DistributedSampler pads.
  explicit StateDetector(std::optional<std::uint64_t> pad_multiple = std::nullopt)
      : pad_multiple_(pad_multiple) {}

  // REQUIRES: r.index <= kMaxIndex; `owner` is r's id in `owners`.
  void add(const SampleRecord& r, std::uint32_t owner, const OwnerTable& owners);
  void report(Report& out) const;
  std::uint64_t bytes() const { return table_.bytes(); }

 private:
  // Cross-rank repeats of one (epoch, index), per epoch, beside the ranks seen.
  struct SameIndexRepeats {
    std::uint32_t max_rank = 0;
    FindingTally repeats;
  };

  FingerprintTable table_;
  FindingTally worker_, epoch_, rank_, sample_;
  std::map<std::uint32_t, SameIndexRepeats> same_index_;
  std::optional<std::uint64_t> pad_multiple_;
};

}  // namespace seedloader::audit
