// Synthetic: n procedurally generated h x w x c images, a pure function of the
// sample index (a colour gradient whose direction and colours come from a hash
// of the index, plus a hashed per-pixel texture), labels index % classes. For
// demos, tests and benches; nothing is stored, so the index costs no memory.
// Fields: "image" from the transform chain (empty chain: [c, h, w] float32 in
// [0, 1]), "label" int64. Owns its transform chain (in a State defined in
// synthetic.cc). Immutable; get() is safe across threads and processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "seedloader/dataset.h"
#include "seedloader/transforms/compose.h"

namespace seedloader {

class Synthetic final : public Dataset {
 public:
  // Throws ConfigError for a zero count or size, c not 1 or 3, or classes == 0.
  Synthetic(std::uint64_t n, int h, int w, int c, Compose transform = Compose(),
            int classes = 10);
  ~Synthetic() override;
  Synthetic(const Synthetic&) = delete;
  Synthetic& operator=(const Synthetic&) = delete;

  std::uint64_t size() const override;
  const SampleLayout& layout() const override;
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

  // The untransformed image of sample `index` (HWC, RGB or grey).
  cv::Mat image(std::uint64_t index) const;

 private:
  struct State;
  std::unique_ptr<const State> state_;
};

}  // namespace seedloader
