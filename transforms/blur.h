// GaussianBlur: a kernel x kernel Gaussian blur with sigma ~ U(sigma_lo, sigma_hi),
// reflecting at the border. Immutable; safe to share across threads and processes.
#pragma once

#include "transforms/transform.h"

namespace seedloader {

class GaussianBlur final : public Transform {
 public:
  // Throws ConfigError unless kernel is odd and positive and
  // 0 < sigma_lo <= sigma_hi.
  GaussianBlur(int kernel, double sigma_lo, double sigma_hi);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  int kernel_;
  double sigma_lo_, sigma_hi_;
};

}  // namespace seedloader
