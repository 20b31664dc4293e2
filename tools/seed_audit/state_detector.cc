#include "tools/seed_audit/state_detector.h"

#include <string>

namespace seedloader::audit {

void StateDetector::add(const SampleRecord& r, std::uint32_t owner,
                        const OwnerTable& owners) {
  if (!r.has_rng) return;
  SameIndexRepeats& epoch = same_index_[r.epoch];
  if (r.rank > epoch.max_rank) epoch.max_rank = r.rank;
  auto first = table_.find_or_insert(r.rng, {owner, static_cast<std::uint32_t>(r.index)});
  if (!first) return;
  const Owner& f = owners[first->owner];
  Example e{place_of(r),
            SamplePlace{f.rank, f.epoch, f.worker, std::nullopt, first->index},
            "same random state as", std::string(r.aug)};
  if (f.run != r.run) {  // e.g. worker streams that restart with a resumed epoch
    e.sample.run = r.run;
    e.other->run = f.run;
  }
  if (f.epoch == r.epoch && first->index == r.index) {
    // Across runs the sample itself was consumed twice (resume_duplicate, unless
    // padding explains it); its per-sample stream repeating with it is no fault.
    if (f.rank != r.rank && f.run == r.run) epoch.repeats.add(std::move(e));
    return;
  }
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
  FindingTally rank = rank_;
  for (const auto& [e, ep] : same_index_) {
    // Padding: at most ranks - 1 (or pad_multiple - 1) indices.
    const std::uint64_t padding = pad_multiple_ ? *pad_multiple_ - 1 : ep.max_rank;
    if (ep.repeats.count <= padding) continue;
    rank.count += ep.repeats.count;
    for (const Example& x : ep.repeats.examples) {
      if (rank.examples.size() < kMaxExamples) rank.examples.push_back(x);
    }
  }
  rank.report_as(FindingKind::kRankRngDuplicate, out);
  sample_.report_as(FindingKind::kSampleRngRepeat, out);
}

}  // namespace seedloader::audit
