// Geometry transforms that choose a window or a size: RandomResizedCrop,
// RandomCrop, CenterCrop, Resize. Immutable; safe to share across threads and
// processes (see transform.h). Sizes are cv::Size (width, height).
#pragma once

#include <utility>

#include "seedloader/transforms/transform.h"
#include "transforms/resample.h"

namespace seedloader {

// The crop window's parameter sampling of torchvision's RandomResizedCrop:
// up to 10 tries of (area fraction ~ U(scale), log aspect ~ U(log ratio)), the
// first window that fits is placed uniformly; otherwise the central crop with the
// aspect clamped into `ratio`. Sizes round halves to even, as Python's round()
// does in torchvision. Result in source coordinates.
// REQUIRES: source has positive width and height.
cv::Rect draw_resized_crop(cv::Size source, std::pair<double, double> scale,
                           std::pair<double, double> ratio, Rng& rng);

class RandomResizedCrop final : public Transform {
 public:
  // Throws ConfigError for a size that is not positive or above the caps of
  // transform.h, or a scale/ratio range that is empty, non-positive, infinite or
  // (scale) above 1.
  explicit RandomResizedCrop(cv::Size size, std::pair<double, double> scale = {0.08, 1.0},
                             std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0});

  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  cv::Size output_size(cv::Size) const override { return size_; }
  std::string describe() const override;

  bool plans_region() const override { return true; }
  cv::Rect plan_region(cv::Size source, Rng& rng, TransformLog* log) const override;
  // 2, 4 or 8 when the region is at least that many times the output size in both
  // dimensions, else 1.
  int max_reduction(cv::Rect region) const override;
  cv::Mat apply_region(const cv::Mat& decoded, cv::Rect2d region) const override;
  cv::Size size() const { return size_; }

 private:
  cv::Size size_;
  std::pair<double, double> scale_;
  std::pair<double, double> ratio_;
};

// A uniformly placed window of `size` after zero padding of `padding` pixels on
// every side (0 <= padding <= kMaxTransformSide). Throws DataError when the
// padded image is smaller than `size` or above kMaxTransformPixels.
class RandomCrop final : public Transform {
 public:
  explicit RandomCrop(cv::Size size, int padding = 0);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  cv::Size output_size(cv::Size) const override { return size_; }
  std::string describe() const override;

 private:
  cv::Size size_;
  int padding_;
};

// The central window of `size`, placed as torchvision's center_crop places it:
// top = round((H - h) / 2) with halves to even, as Python rounds (so 25.5 -> 26,
// 24.5 -> 24); an image smaller than `size` is zero padded around its centre
// first (floor((h - H) / 2) rows above).
class CenterCrop final : public Transform {
 public:
  explicit CenterCrop(cv::Size size);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  cv::Size output_size(cv::Size) const override { return size_; }
  std::string describe() const override;

 private:
  cv::Size size_;
};

// Resize to an exact size, or (shorter_side form) so that the shorter side is
// `shorter_side` and the aspect is kept (the longer side rounded down); a
// shorter-side result above kMaxTransformPixels is a DataError (a 1x65000 image
// resized to 224 would be 224x14560000). Pillow's antialiased bilinear filter
// (resample.h), as torchvision's Resize does to PIL images.
class Resize final : public Transform {
 public:
  explicit Resize(cv::Size size);
  static Resize shorter_side(int side);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  cv::Size output_size(cv::Size in) const override;
  std::string describe() const override;

 private:
  Resize(cv::Size size, int shorter) : size_(size), shorter_(shorter) {}
  cv::Size size_;
  int shorter_ = 0;
};

// Resizes `image` (CV_8UC1 or CV_8UC3) to `size` with Pillow's antialiased
// bilinear filter, through this thread's Resampler.
cv::Mat resize_to(const cv::Mat& image, cv::Size size);

// The whole-pixel part of `decoded` that `window` (decoded coordinates, maybe
// fractional) needs, and in *box the window's place within it: what
// RandomResizedCrop resamples. Pixels outside the enclosing rectangle never weigh
// in, as in torchvision, which crops before it resizes. Throws DataError for an
// empty window.
cv::Mat window_pixels(const cv::Mat& decoded, cv::Rect2d window, ResampleBox* box);

}  // namespace seedloader
