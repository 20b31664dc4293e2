// Datasets used by the loader tests: small wrappers that record what the
// loader hands them, or that fail in a chosen way at a chosen index.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "seedloader/dataset.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader::testing_util {

// StreamProbeDataset whose get() first runs `hook(index)` (which may throw,
// sleep, or kill the process).
class HookedDataset : public Dataset {
 public:
  HookedDataset(std::uint64_t size, std::function<void(std::uint64_t)> hook)
      : inner_(size, 2), hook_(std::move(hook)) {}
  std::uint64_t size() const override { return inner_.size(); }
  const SampleLayout& layout() const override { return inner_.layout(); }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override {
    hook_(index);
    inner_.get(index, rng, out);
  }
  std::string describe() const override { return "HookedDataset"; }

 private:
  StreamProbeDataset inner_;
  std::function<void(std::uint64_t)> hook_;
};

}  // namespace seedloader::testing_util
