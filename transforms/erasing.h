// RandomErasing: with probability p, fills one rectangle of the image with a
// constant, drawn as torchvision's RandomErasing.get_params draws it: up to 10
// tries of (area fraction ~ U(scale), log aspect ~ U(log ratio)), h =
// round(sqrt(area * aspect)), w = round(sqrt(area / aspect)) (halves to even, as
// Python), the first with h < H and w < W placed uniformly; none fitting erases
// nothing. It works on the uint8 image, before the output step, so `value` is
// in pixel units (0 to 255): the same as torchvision's RandomErasing(value=v/255)
// placed after ToTensor and before Normalize. (torchvision's default position,
// after Normalize with value 0, fills with the mean colour instead.)
// Immutable; safe to share across threads and processes.
#pragma once

#include "seedloader/transforms/transform.h"

namespace seedloader {

class RandomErasing final : public Transform {
 public:
  // Throws ConfigError unless 0 <= p <= 1, 0 < scale_lo <= scale_hi <= 1,
  // 0 < ratio_lo <= ratio_hi < inf and 0 <= value <= 255.
  RandomErasing(double p, std::pair<double, double> scale,
                std::pair<double, double> ratio, double value);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  double p_;
  std::pair<double, double> scale_, ratio_;
  double value_;
};

}  // namespace seedloader
