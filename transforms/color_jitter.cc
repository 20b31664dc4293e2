#include "transforms/color_jitter.h"

#include <algorithm>
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

// One RGB pixel to 8-bit HSV and back, in the arithmetic of Pillow's "HSV" mode
// (what torchvision's adjust_hue runs on a PIL image): float and double steps
// exactly as Pillow takes them, so the bytes match it and depend on no SIMD path.
struct Hsv8 {
  std::uint8_t h, s, v;
};

std::uint8_t clip8(int x) { return static_cast<std::uint8_t>(std::clamp(x, 0, 255)); }

Hsv8 to_hsv(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  const std::uint8_t maxc = std::max({r, g, b});
  const std::uint8_t minc = std::min({r, g, b});
  if (maxc == minc) return {0, 0, maxc};
  const float range = static_cast<float>(maxc - minc);
  const float s = range / static_cast<float>(maxc);
  const float rc = static_cast<float>(maxc - r) / range;
  const float gc = static_cast<float>(maxc - g) / range;
  const float bc = static_cast<float>(maxc - b) / range;
  float h;
  if (r == maxc) {
    h = bc - gc;
  } else if (g == maxc) {
    h = static_cast<float>(2.0 + rc - bc);
  } else {
    h = static_cast<float>(4.0 + gc - rc);
  }
  h = static_cast<float>(std::fmod(h / 6.0 + 1.0, 1.0));
  return {clip8(static_cast<int>(h * 255.0)), clip8(static_cast<int>(s * 255.0)), maxc};
}

cv::Vec3b to_rgb(Hsv8 p) {
  const std::uint8_t v = p.v;
  if (p.s == 0) return {v, v, v};
  const int i = static_cast<int>(std::floor(static_cast<float>(p.h) * 6.0 / 255.0));
  const float f = static_cast<float>(static_cast<float>(p.h) * 6.0 / 255.0 - i);
  const float fs = static_cast<float>(static_cast<float>(p.s) / 255.0);
  const std::uint8_t lo = clip8(static_cast<int>(std::round(v * (1.0 - fs))));
  const std::uint8_t down = clip8(static_cast<int>(std::round(v * (1.0 - fs * f))));
  const std::uint8_t up = clip8(static_cast<int>(std::round(v * (1.0 - fs * (1.0 - f)))));
  switch (i % 6) {
    case 0:
      return {v, up, lo};
    case 1:
      return {down, v, lo};
    case 2:
      return {lo, v, up};
    case 3:
      return {lo, down, v};
    case 4:
      return {up, lo, v};
    default:
      return {v, lo, down};
  }
}

cv::Mat adjust_hue(const cv::Mat& image, double shift) {
  if (image.channels() == 1) return image;
  // torchvision adds np.uint8(shift * 255) to H: truncated, then wrapped.
  const int delta = static_cast<int>(shift * 255.0) & 0xff;
  cv::Mat out(image.size(), image.type());
  for (int y = 0; y < image.rows; ++y) {
    const auto* in = image.ptr<cv::Vec3b>(y);
    auto* row = out.ptr<cv::Vec3b>(y);
    for (int x = 0; x < image.cols; ++x) {
      Hsv8 p = to_hsv(in[x][0], in[x][1], in[x][2]);
      p.h = static_cast<std::uint8_t>((p.h + delta) & 0xff);
      row[x] = to_rgb(p);
    }
  }
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
