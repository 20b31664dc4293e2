// ColorJitter: random brightness, contrast, saturation and hue, applied in a random
// order, as torchvision does: factors b, c, s ~ U(max(0, 1 - x), 1 + x), hue shift
// ~ U(-h, h) of a full turn. Brightness scales the pixels; contrast blends with the
// mean grey level; saturation blends with the grey image; hue adds
// trunc(shift * 255) to H in Pillow's 8-bit HSV, byte for byte what torchvision's
// adjust_hue does to a PIL image, in scalar code that no SIMD path changes.
// Saturation and hue are skipped for one-channel images (their draws still happen).
// Immutable; safe to share across threads and processes.
#pragma once

#include "seedloader/transforms/transform.h"

namespace seedloader {

class ColorJitter final : public Transform {
 public:
  // Throws ConfigError for a negative or non-finite strength or a hue above 0.5.
  ColorJitter(double brightness, double contrast, double saturation, double hue);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  double brightness_, contrast_, saturation_, hue_;
};

// The single adjustments, exposed for tests and reuse. Each returns a new image.
cv::Mat adjust_brightness(const cv::Mat& image, double factor);
cv::Mat adjust_contrast(const cv::Mat& image, double factor);
cv::Mat adjust_saturation(const cv::Mat& image, double factor);
// shift in turns, [-0.5, 0.5]. REQUIRES: 3 channels (RGB).
cv::Mat adjust_hue(const cv::Mat& image, double shift);

}  // namespace seedloader
