#include "tools/seed_audit/content_detector.h"

#include "tools/common/hash64.h"

namespace seedloader::audit {

void ContentDetector::add(const SampleRecord& r) {
  if (!r.content) return;
  const std::uint64_t key = tools::mix64(*r.content ^ tools::mix64(r.epoch + 1));
  SamplePlace here = place_of(r);
  here.run = r.run;
  auto [it, fresh] = first_.try_emplace(key, here);
  if (fresh || it->second.index == here.index) return;
  repeats_.add(Example{.sample = here, .other = it->second, .note = "same content"});
}

std::uint64_t ContentDetector::bytes() const {
  return first_.size() * (sizeof(std::uint64_t) + sizeof(SamplePlace));
}

}  // namespace seedloader::audit
