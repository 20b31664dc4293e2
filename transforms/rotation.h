// RandomRotation: rotates about the image centre by an angle ~ U(-degrees,
// degrees), keeping the size; corners outside the source are filled with zero.
// Bilinear interpolation. Immutable; safe to share across threads and processes.
#pragma once

#include "seedloader/transforms/transform.h"

namespace seedloader {

class RandomRotation final : public Transform {
 public:
  // Throws ConfigError unless 0 <= degrees <= 360.
  explicit RandomRotation(double degrees);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  double degrees_;
};

// The rotation itself, by `degrees` (counter-clockwise), for tests and reuse.
cv::Mat rotate_image(const cv::Mat& image, double degrees);

}  // namespace seedloader
