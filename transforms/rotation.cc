#include "transforms/rotation.h"

#include <opencv2/imgproc.hpp>

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {

RandomRotation::RandomRotation(double degrees) : degrees_(degrees) {
  if (!(degrees >= 0 && degrees <= 360)) {
    throw ConfigError("RandomRotation: degrees must be in [0, 360]");
  }
}

cv::Mat rotate_image(const cv::Mat& image, double degrees) {
  const cv::Point2f centre((image.cols - 1) * 0.5f, (image.rows - 1) * 0.5f);
  // OpenCV's positive angle is counter-clockwise, as torchvision's is.
  const cv::Mat m = cv::getRotationMatrix2D(centre, degrees, 1.0);
  cv::Mat out;
  cv::warpAffine(image, out, m, image.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                 cv::Scalar::all(0));
  return out;
}

cv::Mat RandomRotation::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  const double angle = uniform(rng, -degrees_, degrees_);
  if (log) log->record("rotate", "degrees", angle);
  return rotate_image(image, angle);
}

std::string RandomRotation::describe() const {
  return "RandomRotation(" + std::to_string(degrees_) + ")";
}

}  // namespace seedloader
