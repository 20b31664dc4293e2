#include "tools/seed_audit/index_detector.h"

#include <string>

#include "seedloader/error.h"

namespace seedloader::audit {

IndexDetector::IndexDetector(std::optional<std::uint64_t> dataset_size,
                             std::uint64_t allowed_missing)
    : dataset_size_(dataset_size), allowed_missing_(allowed_missing) {}

IndexDetector::Epoch& IndexDetector::epoch(std::uint32_t e) {
  if (last_ == nullptr || last_epoch_ != e) {
    last_ = &epochs_[e];  // std::map nodes are stable
    last_epoch_ = e;
  }
  return *last_;
}

void IndexDetector::add(const SampleRecord& r) {
  if (dataset_size_ && r.index >= *dataset_size_) {
    throw DataError("sample index " + std::to_string(r.index) +
                    " is not below the dataset size " + std::to_string(*dataset_size_) +
                    " (rank " + std::to_string(r.rank) + ", epoch " +
                    std::to_string(r.epoch) + ", worker " + std::to_string(r.worker) +
                    ", batch " + std::to_string(r.batch) + ")");
  }
  Epoch& ep = epoch(r.epoch);
  ++ep.total;
  if (r.rank >= ep.ranks.size()) ep.ranks.resize(r.rank + 1, false);
  if (!ep.ranks[r.rank]) {
    ep.ranks[r.rank] = true;
    ++ep.num_ranks;
  }
  std::uint64_t page = r.index >> kPageBits;
  if (page >= ep.pages.size()) ep.pages.resize(page + 1);
  if (!ep.pages[page]) {
    ep.pages[page] = std::make_unique<std::uint16_t[]>(std::size_t{1} << kPageBits);
  }
  std::uint16_t& first = ep.pages[page][r.index & ((1u << kPageBits) - 1)];
  if (first == 0) {
    first = static_cast<std::uint16_t>(r.rank + 1);
    ++ep.distinct;
    return;
  }
  std::uint32_t first_rank = first - 1u;
  Example e{place_of(r),
            SamplePlace{first_rank, r.epoch, std::nullopt, std::nullopt, r.index},
            "index also visited by", std::string(r.aug)};
  if (first_rank != r.rank) {
    ++ep.cross_rank;
    if (ep.cross_examples.size() < kMaxExamples) ep.cross_examples.push_back(e);
  }
  if (ep.repeat_examples.size() < kMaxExamples)
    ep.repeat_examples.push_back(std::move(e));
}

bool IndexDetector::seen(const Epoch& ep, std::uint64_t index) const {
  std::uint64_t page = index >> kPageBits;
  return page < ep.pages.size() && ep.pages[page] &&
         ep.pages[page][index & ((1u << kPageBits) - 1)] != 0;
}

void IndexDetector::report(Report& out) const {
  FindingTally ranks, coverage;
  for (const auto& [e, ep] : epochs_) {
    if (ep.cross_rank > ep.num_ranks - 1) {
      ranks.count += ep.cross_rank;
      for (const Example& x : ep.cross_examples) {
        if (ranks.examples.size() < kMaxExamples) ranks.examples.push_back(x);
      }
    }
    if (!dataset_size_) continue;
    const std::uint64_t n = *dataset_size_;
    const std::uint64_t world = ep.num_ranks;
    const std::uint64_t padding = world * ((n + world - 1) / world) - n;
    const std::uint64_t missing = n - ep.distinct;
    const std::uint64_t repeats = ep.total - ep.distinct;
    if (missing > allowed_missing_) {
      coverage.count += missing;
      for (std::uint64_t i = 0; i < n && coverage.examples.size() < kMaxExamples; ++i) {
        if (seen(ep, i)) continue;
        coverage.examples.push_back(
            Example{SamplePlace{std::nullopt, e, std::nullopt, std::nullopt, i},
                    std::nullopt, "missing from the epoch", ""});
      }
    }
    if (repeats > padding) {
      coverage.count += repeats - padding;
      for (const Example& x : ep.repeat_examples) {
        if (coverage.examples.size() < kMaxExamples) coverage.examples.push_back(x);
      }
    }
  }
  ranks.report_as(FindingKind::kRankBatchDuplicate, out);
  coverage.report_as(FindingKind::kCoverage, out);
}

std::uint64_t IndexDetector::bytes() const {
  std::uint64_t b = 0;
  for (const auto& [e, ep] : epochs_) {
    b += ep.pages.capacity() * sizeof(void*);
    for (const auto& p : ep.pages) {
      if (p) b += (std::uint64_t{1} << kPageBits) * sizeof(std::uint16_t);
    }
  }
  return b;
}

}  // namespace seedloader::audit
