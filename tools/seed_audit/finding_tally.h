// FindingTally: a finding's running count and its first few examples.
#pragma once

#include <utility>

#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

inline constexpr std::size_t kMaxExamples = 5;

inline SamplePlace place_of(const SampleRecord& r) {
  return SamplePlace{r.rank, r.epoch, r.worker, r.batch, r.index};
}

struct FindingTally {
  std::uint64_t count = 0;
  std::vector<Example> examples;

  void add(Example e) {
    ++count;
    if (examples.size() < kMaxExamples) examples.push_back(std::move(e));
  }
  // Appends this tally to `report` as a finding of `kind` when it counted anything.
  void report_as(FindingKind kind, Report& report) const {
    if (count > 0) report.findings.push_back(Finding{kind, count, examples});
  }
};

}  // namespace seedloader::audit
