// Compose: a chain of Transforms ending in a ToTensor. Owns its transforms;
// immutable after construction, so one Compose serves every worker (safe to
// share across threads and fork). Movable, not copyable.
//
// Decoding at reduced scale: run(ImageSource) lets the first transform, when it
// plans a region (RandomResizedCrop), draw its window from the header's width and
// height before any pixel is decoded, then asks the source to decode at the
// largest reduction (2, 4, 8) that still leaves the window at least the output
// size, decoding only the window where the format allows (JPEG), and finishes
// the crop on the smaller image.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "seedloader/transforms/tensor.h"
#include "seedloader/transforms/transform.h"

namespace seedloader {

class Compose {
 public:
  Compose() = default;
  explicit Compose(std::vector<std::unique_ptr<Transform>> steps,
                   ToTensor output = ToTensor());
  Compose(Compose&&) = default;
  Compose& operator=(Compose&&) = default;
  Compose(const Compose&) = delete;
  Compose& operator=(const Compose&) = delete;

  // Adds a step at the end (before the ToTensor); returns *this.
  template <typename T>
  Compose& add(T step) {
    steps_.push_back(std::make_unique<T>(std::move(step)));
    return *this;
  }

  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const;
  // Plans the first step on the header's size, decodes at reduced scale when it
  // allows, then applies the rest. `reduction_used`, when given, receives the
  // reduction the source decoded at.
  cv::Mat apply(const ImageSource& source, Rng& rng, TransformLog* log,
                int* reduction_used = nullptr) const;

  const ToTensor& output() const { return output_; }
  const std::vector<std::unique_ptr<Transform>>& steps() const { return steps_; }
  // The final image size for an input of size `in` ({0, 0} = unknown); {0, 0}
  // when the chain does not fix it.
  cv::Size output_size(cv::Size in = {0, 0}) const;
  std::string describe() const;

 private:
  std::vector<std::unique_ptr<Transform>> steps_;
  ToTensor output_;
};

}  // namespace seedloader
