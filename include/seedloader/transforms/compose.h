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
#include <span>
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

  // True for the chains write() fuses: a RandomResizedCrop, alone or followed by
  // a horizontal RandomFlip.
  bool fuses() const;
  // For a chain that fuses(): decodes `source` as apply() does, then resamples,
  // mirrors and converts through output() in one pass straight into `out` (CHW,
  // T is output().dtype()'s element type), with no image of the output size in
  // between. The bytes and the draws equal apply() followed by output().write().
  // Throws DataError as they do, and when out does not fit C x H x W.
  template <typename T>
  void write_fused(const ImageSource& source, Rng& rng, TransformLog* log,
                   std::span<T> out) const;

  const ToTensor& output() const { return output_; }
  const std::vector<std::unique_ptr<Transform>>& steps() const { return steps_; }
  // The final image size for an input of size `in` ({0, 0} = unknown); {0, 0}
  // when the chain does not fix it.
  cv::Size output_size(cv::Size in = {0, 0}) const;
  std::string describe() const;

 private:
  // Plans the first step, decodes, and returns the decoded image with the
  // planned region's place in it (the whole image when nothing plans a region).
  cv::Mat decode_planned(const ImageSource& source, Rng& rng, TransformLog* log,
                         int* reduction_used, cv::Rect2d* region) const;

  std::vector<std::unique_ptr<Transform>> steps_;
  ToTensor output_;
};

}  // namespace seedloader
