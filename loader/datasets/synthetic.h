// Synthetic: n procedurally generated h x w x c images, a pure function of the
// sample index (a colour gradient whose direction and colours come from a hash
// of the index, plus a hashed per-pixel texture), labels index % classes. For
// demos, tests and benches; nothing is stored, so the index costs no memory.
// Fields: "image" from the transform chain (empty chain: [c, h, w] float32 in
// [0, 1]), "label" int64. Immutable; get() is safe across threads and processes.
#pragma once

#include <string>

#include "loader/dataset.h"
#include "loader/datasets/image_output.h"

namespace seedloader {

class Synthetic final : public Dataset {
 public:
  // Throws ConfigError for a zero count or size, c not 1 or 3, or classes == 0.
  Synthetic(std::uint64_t n, int h, int w, int c, Compose transform = Compose(),
            int classes = 10);

  std::uint64_t size() const override { return n_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

  // The untransformed image of sample `index` (HWC, RGB or grey).
  cv::Mat image(std::uint64_t index) const;

 private:
  std::uint64_t n_;
  int h_, w_, c_, classes_;
  ImageOutput output_;
  SampleLayout layout_;
};

}  // namespace seedloader
