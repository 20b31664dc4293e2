#include "transforms/blur.h"

#include <opencv2/imgproc.hpp>

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {

GaussianBlur::GaussianBlur(int kernel, double sigma_lo, double sigma_hi)
    : kernel_(kernel), sigma_lo_(sigma_lo), sigma_hi_(sigma_hi) {
  if (kernel <= 0 || kernel % 2 == 0 || kernel > kMaxKernel) {
    throw ConfigError("GaussianBlur: kernel must be odd and in [1, " +
                      std::to_string(kMaxKernel) + "], got " + std::to_string(kernel));
  }
  if (!(sigma_lo > 0 && sigma_lo <= sigma_hi && sigma_hi <= kMaxSigma)) {
    throw ConfigError("GaussianBlur: sigma range must satisfy 0 < lo <= hi <= 1000");
  }
}

cv::Mat gaussian_blur(const cv::Mat& image, int kernel, double sigma) {
  cv::Mat out;
  cv::GaussianBlur(image, out, cv::Size(kernel, kernel), sigma, sigma,
                   cv::BORDER_REFLECT_101);
  return out;
}

cv::Mat GaussianBlur::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  const double sigma = uniform(rng, sigma_lo_, sigma_hi_);
  if (log) log->record("blur", "sigma", sigma);
  return gaussian_blur(image, kernel_, sigma);
}

std::string GaussianBlur::describe() const {
  return "GaussianBlur(" + std::to_string(kernel_) + ", sigma=(" +
         std::to_string(sigma_lo_) + ", " + std::to_string(sigma_hi_) + "))";
}

}  // namespace seedloader
