#include "tools/seed_audit/auditor.h"

#include <algorithm>
#include <string>

#include "seedloader/error.h"
#include "tools/seed_audit/finding_tally.h"

namespace seedloader::audit {

namespace {

// Adds `f` to the finding of its kind in `to` (its count, and its examples up to
// kMaxExamples), or as a new one.
void merge_finding(std::vector<Finding>& to, Finding f) {
  for (Finding& have : to) {
    if (have.kind != f.kind) continue;
    have.count += f.count;
    for (Example& e : f.examples)
      if (have.examples.size() < kMaxExamples) have.examples.push_back(std::move(e));
    return;
  }
  to.push_back(std::move(f));
}

}  // namespace

Auditor::Auditor(AuditOptions options)
    : states_(options.pad_multiple),
      indices_(options.dataset_size, options.allowed_missing, options.pad_multiple),
      options_(options) {
  if (options_.mixture) composition_.emplace(*options_.mixture);
  if (options.pad_multiple && *options.pad_multiple == 0) {
    throw ConfigError("the padding multiple must be positive");
  }
  if (options.dataset_size && *options.dataset_size == 0) {
    throw ConfigError("dataset size must be positive");
  }
  if (options.dataset_size && *options.dataset_size > kMaxIndex + 1) {
    throw ConfigError("dataset size " + std::to_string(*options.dataset_size) +
                      " exceeds the audit's limit of " + std::to_string(kMaxIndex + 1));
  }
}

void Auditor::add(const SampleRecord& r) {
  if (r.rank > kMaxRank) {
    throw DataError("rank " + std::to_string(r.rank) + " exceeds the audit's limit of " +
                    std::to_string(kMaxRank));
  }
  if (r.index > kMaxIndex) {
    throw DataError("sample index " + std::to_string(r.index) +
                    " exceeds the audit's limit of " + std::to_string(kMaxIndex));
  }
  if (r.run > kMaxRun) {
    throw DataError("run " + std::to_string(r.run) + " exceeds the audit's limit of " +
                    std::to_string(kMaxRun));
  }
  if (r.epoch > kMaxEpoch || r.worker > kMaxWorker || r.source_epoch > kMaxEpoch) {
    throw DataError("epoch or worker id exceeds the audit's limit of " +
                    std::to_string(kMaxEpoch));
  }
  IndexDetector& indices = r.source.empty() ? indices_ : source_detector(r.source);
  SampleRecord by_source;
  const SampleRecord* seen = &r;
  if (!r.source.empty()) {  // the source's own epoch, as its detector counts them
    by_source = r;
    by_source.epoch = r.source_epoch;
    seen = &by_source;
  }
  if (r.skipped) {  // declared, not trained: where it would have been is all there is
    indices.declare(*seen);
    if (composition_) composition_->add(r);  // composed into its step all the same
    return;
  }
  indices.add(*seen);  // first: it rejects indices outside the dataset
  contents_.add(r);
  if (composition_) composition_->add(r);
  std::uint32_t owner = owners_.id(r);
  states_.add(r, owner, owners_);
  orders_.add(r, owner, owners_);
  ++samples_;
}

std::uint64_t Auditor::bytes() const {
  std::uint64_t b = states_.bytes() + indices_.bytes() + contents_.bytes();
  for (const auto& [name, detector] : sources_) b += detector->bytes();
  return b;
}

IndexDetector& Auditor::source_detector(const std::string& name) {
  auto it = sources_.find(name);
  if (it == sources_.end()) {
    const auto size = options_.source_sizes.find(name);
    it = sources_
             .emplace(name, std::make_unique<IndexDetector>(
                                size == options_.source_sizes.end()
                                    ? std::nullopt
                                    : std::optional<std::uint64_t>(size->second),
                                0, std::nullopt, true))
             .first;
  }
  return *it->second;
}

Report Auditor::report() const {
  Report out;
  out.samples = samples_;
  states_.report(out);
  indices_.report(out);
  contents_.report(out);
  if (composition_) composition_->report(out);
  for (const auto& [source, detector] : sources_) {
    Report own;
    detector->report(own);
    const std::string& name = source;  // a lambda may not capture a structured binding
    auto name_source = [&name](Example& e) {
      e.sample.source = name;
      if (e.other) e.other->source = name;
    };
    for (Finding& f : own.findings) {
      for (Example& e : f.examples) name_source(e);
      merge_finding(out.findings, std::move(f));
    }
    for (Finding& f : own.information) {
      for (Example& e : f.examples) name_source(e);
      merge_finding(out.information, std::move(f));
    }
  }
  orders_.report(out, owners_);
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.kind < b.kind; });
  return out;
}

}  // namespace seedloader::audit
