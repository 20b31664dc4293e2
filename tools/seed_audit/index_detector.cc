#include "tools/seed_audit/index_detector.h"

#include <algorithm>
#include <string>

#include "seedloader/error.h"

namespace seedloader::audit {
namespace {

// Page entries hold visitor id + 1 in 16 bits, 0 meaning unseen.
constexpr std::size_t kMaxVisitors = 0xFFFF;

void append_examples(const std::vector<Example>& from, FindingTally& to) {
  for (const Example& x : from) {
    if (to.examples.size() < kMaxExamples) to.examples.push_back(x);
  }
}

}  // namespace

IndexDetector::IndexDetector(std::optional<std::uint64_t> dataset_size,
                             std::uint64_t allowed_missing,
                             std::optional<std::uint64_t> pad_multiple,
                             bool source_epochs)
    : dataset_size_(dataset_size),
      allowed_missing_(allowed_missing),
      pad_multiple_(source_epochs ? std::optional<std::uint64_t>(1) : pad_multiple),
      source_epochs_(source_epochs) {}

IndexDetector::Epoch& IndexDetector::epoch(std::uint32_t e) {
  if (last_ == nullptr || last_epoch_ != e) {
    last_ = &epochs_[e];  // std::map nodes are stable
    last_epoch_ = e;
  }
  return *last_;
}

std::uint16_t IndexDetector::visitor(const SampleRecord& r) {
  const std::pair<std::uint32_t, std::uint32_t> key{r.run, r.rank};
  if (!visitors_.empty() && visitors_[last_visitor_] == key) return last_visitor_;
  auto it = visitor_ids_.find(key);
  if (it == visitor_ids_.end()) {
    if (visitors_.size() == kMaxVisitors) {
      throw DataError("run " + std::to_string(r.run) + ", rank " +
                      std::to_string(r.rank) + ": the audit tells at most " +
                      std::to_string(kMaxVisitors) + " (run, rank) pairs apart");
    }
    it = visitor_ids_.emplace(key, static_cast<std::uint16_t>(visitors_.size())).first;
    visitors_.push_back(key);
    runs_.insert(r.run);
  }
  last_visitor_ = it->second;
  return last_visitor_;
}

void IndexDetector::check_index(const SampleRecord& r) const {
  if (dataset_size_ && r.index >= *dataset_size_) {
    throw DataError(std::string(r.skipped ? "declared skipped sample" : "sample") +
                    " index " + std::to_string(r.index) +
                    " is not below the dataset size " + std::to_string(*dataset_size_) +
                    " (rank " + std::to_string(r.rank) + ", epoch " +
                    std::to_string(r.epoch) +
                    (r.skipped ? "" : ", worker " + std::to_string(r.worker)) +
                    ", batch " + std::to_string(r.batch) + ")");
  }
}

void IndexDetector::declare(const SampleRecord& r) {
  check_index(r);
  if (!epoch(r.epoch).declared.insert(r.index).second) return;
  SamplePlace place{r.rank, r.epoch, std::nullopt, r.batch, r.index};
  place.run = r.run;
  declared_.add(Example{place, std::nullopt, "declared skipped", ""});
}

void IndexDetector::add(const SampleRecord& r) {
  check_index(r);
  const std::uint16_t me = visitor(r);
  Epoch& ep = epoch(r.epoch);
  ++ep.total;
  RunShare& share = ep.runs[r.run];
  if (r.rank >= share.ranks.size()) share.ranks.resize(r.rank + 1, false);
  if (!share.ranks[r.rank]) {
    share.ranks[r.rank] = true;
    ++share.num_ranks;
  }
  std::uint64_t page = r.index >> kPageBits;
  if (page >= ep.pages.size()) ep.pages.resize(page + 1);
  if (!ep.pages[page]) {
    ep.pages[page] = std::make_unique<std::uint16_t[]>(std::size_t{1} << kPageBits);
  }
  std::uint16_t& first = ep.pages[page][r.index & ((1u << kPageBits) - 1)];
  if (first == 0) {
    first = static_cast<std::uint16_t>(me + 1);
    ++ep.distinct;
    return;
  }
  const auto [first_run, first_rank] = visitors_[first - 1u];
  if (first_run != r.run) {
    ++ep.cross_run;
    if (ep.cross_run_examples.size() < kMaxExamples) {
      SamplePlace sample = place_of(r);
      sample.run = r.run;
      SamplePlace other{first_rank, r.epoch, std::nullopt, std::nullopt, r.index};
      other.run = first_run;
      ep.cross_run_examples.push_back(Example{
          sample, other, "consumed again after a restart, first by", std::string(r.aug)});
    }
    return;
  }
  Example e{place_of(r),
            SamplePlace{first_rank, r.epoch, std::nullopt, std::nullopt, r.index},
            "index also visited by", std::string(r.aug)};
  if (first_rank != r.rank) {
    ++share.cross_rank;
    if (share.cross_examples.size() < kMaxExamples) share.cross_examples.push_back(e);
  }
  if (ep.repeat_examples.size() < kMaxExamples)
    ep.repeat_examples.push_back(std::move(e));
}

std::uint64_t IndexDetector::declared_unseen(const Epoch& ep) const {
  std::uint64_t n = 0;
  for (const std::uint64_t i : ep.declared) n += seen(ep, i) ? 0 : 1;
  return n;
}

bool IndexDetector::seen(const Epoch& ep, std::uint64_t index) const {
  std::uint64_t page = index >> kPageBits;
  return page < ep.pages.size() && ep.pages[page] &&
         ep.pages[page][index & ((1u << kPageBits) - 1)] != 0;
}

std::uint64_t IndexDetector::multiple(std::uint32_t ranks) const {
  return pad_multiple_ ? *pad_multiple_ : ranks;
}

void IndexDetector::report_missing(std::uint32_t e, const Epoch& ep,
                                   FindingTally& tally) const {
  const std::uint64_t n = *dataset_size_;
  tally.count += n - ep.distinct - declared_unseen(ep);
  std::string note = "missing from the epoch";
  if (runs_.size() > 1) {
    note = "consumed by none of the epoch's runs (";
    const char* sep = "";
    for (const auto& [run, share] : ep.runs) {
      note += sep + std::to_string(run);
      sep = ", ";
    }
    note += ")";
  }
  for (std::uint64_t i = 0; i < n && tally.examples.size() < kMaxExamples; ++i) {
    if (seen(ep, i) || ep.declared.count(i) != 0) continue;
    tally.examples.push_back(
        Example{SamplePlace{std::nullopt, e, std::nullopt, std::nullopt, i}, std::nullopt,
                note, ""});
  }
}

void IndexDetector::report(Report& out) const {
  FindingTally ranks, coverage, duplicates, gaps;
  for (const auto& [e, ep] : epochs_) {
    std::uint64_t max_multiple = 1;
    for (const auto& [run, share] : ep.runs) {
      const std::uint64_t m = multiple(share.num_ranks);
      max_multiple = std::max(max_multiple, m);
      if (share.cross_rank > m - 1) {
        ranks.count += share.cross_rank;
        append_examples(share.cross_examples, ranks);
      }
    }
    if (!dataset_size_) {
      if (ep.cross_run > max_multiple - 1) {
        duplicates.count += ep.cross_run;
        append_examples(ep.cross_run_examples, duplicates);
      }
      // Unpadded: a repeat within a run is one with or without the size.
      std::uint64_t within = ep.total - ep.distinct - ep.cross_run;
      for (const auto& [run, share] : ep.runs) within -= share.cross_rank;
      if (source_epochs_ && within > 0) {
        coverage.count += within;
        append_examples(ep.repeat_examples, coverage);
      }
      continue;
    }
    const std::uint64_t n = *dataset_size_;
    std::uint64_t padding = 0;
    for (const auto& [run, share] : ep.runs) {
      const std::uint64_t m = multiple(share.num_ranks);
      padding = std::max(padding, m * ((n + m - 1) / m) - n);
    }
    const bool open = source_epochs_ && e == epochs_.rbegin()->first;
    if (!open && n - ep.distinct - declared_unseen(ep) > allowed_missing_) {
      report_missing(e, ep, runs_.size() > 1 ? gaps : coverage);
    }
    std::uint64_t repeats = ep.total - ep.distinct;
    if (source_epochs_)  // unpadded: the cross-rank repeats are counted above
      for (const auto& [run, share] : ep.runs) repeats -= share.cross_rank;
    if (repeats > padding) {
      const std::uint64_t excess = repeats - padding;
      const std::uint64_t across = std::min(ep.cross_run, excess);
      if (across > 0) {
        duplicates.count += across;
        append_examples(ep.cross_run_examples, duplicates);
      }
      if (excess > across) {
        coverage.count += excess - across;
        append_examples(ep.repeat_examples, coverage);
      }
    }
  }
  ranks.report_as(FindingKind::kRankBatchDuplicate, out);
  coverage.report_as(FindingKind::kCoverage, out);
  duplicates.report_as(FindingKind::kResumeDuplicate, out);
  gaps.report_as(FindingKind::kResumeGap, out);
  if (declared_.count > 0)
    out.information.push_back(
        Finding{FindingKind::kDeclaredSkip, declared_.count, declared_.examples});
}

std::uint64_t IndexDetector::bytes() const {
  std::uint64_t b = 0;
  for (const auto& [e, ep] : epochs_) {
    b += ep.pages.capacity() * sizeof(void*);
    for (const auto& p : ep.pages) {
      if (p) b += (std::uint64_t{1} << kPageBits) * sizeof(std::uint16_t);
    }
    b += ep.declared.size() * 48;  // a set node: the value and three links, about
  }
  return b;
}

}  // namespace seedloader::audit
