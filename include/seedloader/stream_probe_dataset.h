// StreamProbeDataset: a dataset for loader tests and demos that shows which random
// stream each sample was given. Nothing is stored; sample i is computed from i and
// the stream:
//   "value" f32 [dim]: i + uniform_float(rng) per element
//   "index" i64 []:    i
//   "draw"  i64 []:    the stream's first raw draw (before "value"'s draws)
// So a test can check, from a batch alone, that every sample arrived once and that
// its draws came from the stream the seeding contract (docs/design.md) gives it.
// Not to be confused with datasets/synthetic.h's Synthetic, which makes images.
// Immutable; get() is safe across processes.
#pragma once

#include <cstdint>
#include <string>

#include "seedloader/dataset.h"

namespace seedloader {

class StreamProbeDataset : public Dataset {
 public:
  StreamProbeDataset(std::uint64_t size, std::int64_t dim);

  std::uint64_t size() const override { return size_; }
  const SampleLayout& layout() const override { return layout_; }
  // Throws DataError for index >= size().
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  std::uint64_t size_;
  SampleLayout layout_;
};

}  // namespace seedloader
