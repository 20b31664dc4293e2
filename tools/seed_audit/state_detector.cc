#include "tools/seed_audit/state_detector.h"

#include <string>

namespace seedloader::audit {

void StateDetector::add(const SampleRecord& r, std::uint32_t owner,
                        const OwnerTable& owners) {
  if (!r.has_rng) return;
  auto first = table_.find_or_insert(r.rng, {owner, static_cast<std::uint32_t>(r.index)});
  if (!first) return;
  const Owner& f = owners[first->owner];
  if (f.epoch == r.epoch && first->index == r.index) return;
  Example e{place_of(r),
            SamplePlace{f.rank, f.epoch, f.worker, std::nullopt, first->index},
            "same random state as", std::string(r.aug)};
  if (f.rank != r.rank) {
    rank_.add(std::move(e));
  } else if (f.epoch != r.epoch) {
    epoch_.add(std::move(e));
  } else if (f.worker != r.worker) {
    worker_.add(std::move(e));
  } else {
    sample_.add(std::move(e));
  }
}

void StateDetector::report(Report& out) const {
  worker_.report_as(FindingKind::kWorkerRngDuplicate, out);
  epoch_.report_as(FindingKind::kEpochRngRepeat, out);
  rank_.report_as(FindingKind::kRankRngDuplicate, out);
  sample_.report_as(FindingKind::kSampleRngRepeat, out);
}

}  // namespace seedloader::audit
