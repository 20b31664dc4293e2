#include "tools/seed_audit/auditor.h"

#include <algorithm>
#include <string>

#include "seedloader/error.h"

namespace seedloader::audit {

Auditor::Auditor(AuditOptions options)
    : states_(options.pad_multiple),
      indices_(options.dataset_size, options.allowed_missing, options.pad_multiple) {
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
  if (r.epoch > kMaxEpoch || r.worker > kMaxWorker) {
    throw DataError("epoch or worker id exceeds the audit's limit of " +
                    std::to_string(kMaxEpoch));
  }
  if (r.skipped) {  // declared, not trained: where it would have been is all there is
    indices_.declare(r);
    return;
  }
  indices_.add(r);  // first: it rejects indices outside the dataset
  std::uint32_t owner = owners_.id(r);
  states_.add(r, owner, owners_);
  orders_.add(r, owner, owners_);
  ++samples_;
}

Report Auditor::report() const {
  Report out;
  out.samples = samples_;
  states_.report(out);
  indices_.report(out);
  orders_.report(out, owners_);
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.kind < b.kind; });
  return out;
}

}  // namespace seedloader::audit
