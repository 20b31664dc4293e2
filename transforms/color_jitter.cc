#include "transforms/color_jitter.h"

#include <array>
#include <cmath>
#include <opencv2/imgproc.hpp>
#include <sstream>

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {
namespace {

cv::Mat grey_of(const cv::Mat& image) {
  if (image.channels() == 1) return image;
  cv::Mat grey;
  cv::cvtColor(image, grey, cv::COLOR_RGB2GRAY);
  return grey;
}

}  // namespace

cv::Mat adjust_brightness(const cv::Mat& image, double factor) {
  cv::Mat out;
  image.convertTo(out, image.type(), factor, 0.0);  // saturating
  return out;
}

cv::Mat adjust_contrast(const cv::Mat& image, double factor) {
  const double mean = cv::mean(grey_of(image))[0];
  cv::Mat out;
  image.convertTo(out, image.type(), factor, (1.0 - factor) * mean);
  return out;
}

cv::Mat adjust_saturation(const cv::Mat& image, double factor) {
  if (image.channels() == 1) return image;
  cv::Mat grey3;
  cv::cvtColor(grey_of(image), grey3, cv::COLOR_GRAY2RGB);
  cv::Mat out;
  cv::addWeighted(image, factor, grey3, 1.0 - factor, 0.0, out);
  return out;
}

cv::Mat adjust_hue(const cv::Mat& image, double shift) {
  if (image.channels() == 1) return image;
  cv::Mat hsv;
  cv::cvtColor(image, hsv, cv::COLOR_RGB2HSV_FULL);  // H in [0, 256)
  const int delta = static_cast<int>(std::lround(shift * 256.0));
  for (int y = 0; y < hsv.rows; ++y) {
    auto* row = hsv.ptr<cv::Vec3b>(y);
    for (int x = 0; x < hsv.cols; ++x) {
      row[x][0] = static_cast<std::uint8_t>((row[x][0] + delta + 256) & 0xff);
    }
  }
  cv::Mat out;
  cv::cvtColor(hsv, out, cv::COLOR_HSV2RGB_FULL);
  return out;
}

ColorJitter::ColorJitter(double brightness, double contrast, double saturation,
                         double hue)
    : brightness_(brightness), contrast_(contrast), saturation_(saturation), hue_(hue) {
  const auto finite_non_negative = [](double x) { return x >= 0 && std::isfinite(x); };
  if (!finite_non_negative(brightness) || !finite_non_negative(contrast) ||
      !finite_non_negative(saturation) || !(hue >= 0 && hue <= 0.5)) {
    throw ConfigError(
        "ColorJitter: strengths must be finite and >= 0 and hue must be in [0, 0.5]");
  }
}

cv::Mat ColorJitter::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  std::array<int, 4> order = {0, 1, 2, 3};
  shuffle(rng, std::span<int>(order));
  const double b = uniform(rng, std::max(0.0, 1 - brightness_), 1 + brightness_);
  const double c = uniform(rng, std::max(0.0, 1 - contrast_), 1 + contrast_);
  const double s = uniform(rng, std::max(0.0, 1 - saturation_), 1 + saturation_);
  const double h = uniform(rng, -hue_, hue_);
  if (log) {
    log->record("jitter", "brightness", b);
    log->record("jitter", "contrast", c);
    log->record("jitter", "saturation", s);
    log->record("jitter", "hue", h);
  }
  for (int op : order) {
    switch (op) {
      case 0:
        if (brightness_ > 0) image = adjust_brightness(image, b);
        break;
      case 1:
        if (contrast_ > 0) image = adjust_contrast(image, c);
        break;
      case 2:
        if (saturation_ > 0) image = adjust_saturation(image, s);
        break;
      default:
        if (hue_ > 0) image = adjust_hue(image, h);
        break;
    }
  }
  return image;
}

std::string ColorJitter::describe() const {
  std::ostringstream out;
  out << "ColorJitter(brightness=" << brightness_ << ", contrast=" << contrast_
      << ", saturation=" << saturation_ << ", hue=" << hue_ << ")";
  return out.str();
}

}  // namespace seedloader
