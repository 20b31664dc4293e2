// GaussianBlur: a kernel x kernel Gaussian blur with sigma ~ U(sigma_lo, sigma_hi),
// reflecting at the border. Immutable; safe to share across threads and processes.
#pragma once

#include "seedloader/transforms/transform.h"

namespace seedloader {

class GaussianBlur final : public Transform {
 public:
  // A kernel wider than 255 or a sigma above 1000 blurs no differently from
  // the caps in practice, and unbounded they cost unbounded memory and time.
  static constexpr int kMaxKernel = 255;
  static constexpr double kMaxSigma = 1000.0;

  // Throws ConfigError unless kernel is odd and in [1, kMaxKernel] and
  // 0 < sigma_lo <= sigma_hi <= kMaxSigma.
  GaussianBlur(int kernel, double sigma_lo, double sigma_hi);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  int kernel_;
  double sigma_lo_, sigma_hi_;
};

// The blur itself with one sigma, for tests and reuse.
cv::Mat gaussian_blur(const cv::Mat& image, int kernel, double sigma);

}  // namespace seedloader
