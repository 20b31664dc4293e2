#include "tools/seed_audit/order_detector.h"

#include <string>
#include <utility>

#include "tools/common/hash64.h"

namespace seedloader::audit {

void OrderDetector::add(const SampleRecord& r, std::uint32_t owner, OwnerTable& owners) {
  Owner& o = owners[owner];
  if (o.has_last && r.index < o.last_index) ++o.decreases;
  o.last_index = r.index;
  o.has_last = true;

  std::uint64_t k = key(r.rank, r.epoch);
  if (last_ == nullptr || last_key_ != k) {
    last_ = &orders_[k];  // std::map nodes are stable
    last_key_ = k;
  }
  EpochOrder& eo = *last_;
  eo.sum += tools::mix64(tools::mix64(r.batch + 0x9e3779b97f4a7c15ull) ^ r.index);
  if (eo.samples == 0 || r.batch < *eo.first.batch) eo.first = place_of(r);
  ++eo.samples;
}

void OrderDetector::report(Report& out, const OwnerTable& owners) const {
  std::map<std::uint64_t, std::uint64_t> decreases;  // per (rank, epoch)
  for (const Owner& o : owners.all()) decreases[key(o.rank, o.epoch)] += o.decreases;
  FindingTally tally;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint32_t> seen;  // per rank
  std::uint32_t rank = 0;
  for (const auto& [k, eo] : orders_) {
    std::uint32_t r = static_cast<std::uint32_t>(k >> 32);
    std::uint32_t e = static_cast<std::uint32_t>(k);
    if (seen.empty() || r != rank) {
      seen.clear();
      rank = r;
    }
    auto [it, inserted] = seen.try_emplace({eo.sum, eo.samples}, e);
    if (inserted || decreases[k] < 2) continue;
    tally.add(Example{
        eo.first, SamplePlace{r, it->second, std::nullopt, std::nullopt, std::nullopt},
        "same sample order as", ""});
  }
  tally.report_as(FindingKind::kEpochOrderRepeat, out);
}

}  // namespace seedloader::audit
