// ContentDetector: content_repeat — the same sample content (a trace's "content",
// the hash of the produced sample) trained at two places of one epoch: two
// workers iterating the same stream, two ranks reading an unsplit stream, a
// resumed stream restarted from its start. Each repeat is compared with the first
// sample of that content in the epoch (over all runs) and counted once; a repeat
// at the same (epoch, index) is left to IndexDetector (DistributedSampler padding
// repeats an index on purpose; a restart that repeats one is resume_duplicate).
// Only samples whose record has a content are seen. Memory: one entry per
// distinct (epoch, content). Not thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "tools/seed_audit/finding_tally.h"

namespace seedloader::audit {

class ContentDetector {
 public:
  void add(const SampleRecord& r);
  void report(Report& out) const { repeats_.report_as(FindingKind::kContentRepeat, out); }
  std::uint64_t bytes() const;

 private:
  std::unordered_map<std::uint64_t, SamplePlace> first_;  // by (epoch, content)
  FindingTally repeats_;
};

}  // namespace seedloader::audit
