#include "transforms/crop.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <opencv2/imgproc.hpp>
#include <sstream>

#include "seedloader/error.h"
#include "seedloader/random.h"
#include "transforms/resample.h"

namespace seedloader {
namespace {

std::string size_text(cv::Size s) {
  return std::to_string(s.width) + "x" + std::to_string(s.height);
}

void check_size(cv::Size size, const char* what) {
  if (size.width <= 0 || size.height <= 0) {
    throw ConfigError(std::string(what) + ": size must be positive, got " +
                      size_text(size));
  }
  if (size.width > kMaxTransformSide || size.height > kMaxTransformSide ||
      static_cast<std::uint64_t>(size.width) * size.height > kMaxTransformPixels) {
    throw ConfigError(std::string(what) + ": size " + size_text(size) +
                      " is above the limit of " + std::to_string(kMaxTransformSide) +
                      " per side and " + std::to_string(kMaxTransformPixels) + " pixels");
  }
}

// Throws DataError unless a width x height image fits kMaxTransformPixels. The
// sides are checked alone first, so that their product cannot wrap.
void check_pixels(std::uint64_t width, std::uint64_t height, const char* what) {
  if (width > kMaxTransformPixels || height > kMaxTransformPixels ||
      width * height > kMaxTransformPixels) {
    throw DataError(std::string(what) + ": a " + std::to_string(width) + "x" +
                    std::to_string(height) + " image is above the cap of " +
                    std::to_string(kMaxTransformPixels) + " pixels");
  }
}

// Python's round(): halves to even (std::nearbyint in the default rounding
// mode), where std::lround would take them away from zero. torchvision rounds
// crop sizes and centred offsets this way.
int round_half_even(double x) { return static_cast<int>(std::nearbyint(x)); }

void require_nonempty(const cv::Mat& image, const char* what) {
  if (image.empty()) throw DataError(std::string(what) + ": empty image");
}

}  // namespace

cv::Mat resize_to(const cv::Mat& image, cv::Size size) {
  if (image.size() == size) return image;
  cv::Mat out;
  thread_resampler().resize(
      image, ResampleBox{0, 0, double(image.cols), double(image.rows)}, size, out);
  return out;
}

cv::Mat window_pixels(const cv::Mat& decoded, cv::Rect2d window, ResampleBox* box) {
  const cv::Rect outer = enclosing_rect(window, decoded.size());
  if (outer.empty()) throw DataError("RandomResizedCrop: empty window");
  *box =
      ResampleBox{window.x - outer.x, window.y - outer.y,
                  window.x + window.width - outer.x, window.y + window.height - outer.y};
  return decoded(outer);
}

cv::Rect draw_resized_crop(cv::Size source, std::pair<double, double> scale,
                           std::pair<double, double> ratio, Rng& rng) {
  const int width = source.width;
  const int height = source.height;
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio.first);
  const double log_hi = std::log(ratio.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform(rng, scale.first, scale.second);
    const double aspect = std::exp(uniform(rng, log_lo, log_hi));
    // Compared as doubles: an extreme ratio range gives sides far beyond int.
    const double w = std::nearbyint(std::sqrt(target_area * aspect));
    const double h = std::nearbyint(std::sqrt(target_area / aspect));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int wi = static_cast<int>(w);
      const int hi = static_cast<int>(h);
      const int top =
          static_cast<int>(bounded(rng, static_cast<std::uint64_t>(height - hi + 1)));
      const int left =
          static_cast<int>(bounded(rng, static_cast<std::uint64_t>(width - wi + 1)));
      return cv::Rect(left, top, wi, hi);
    }
  }
  // Fallback: the whole image, its aspect clamped into the ratio range, centred.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width;
  int h = height;
  if (in_ratio < ratio.first) {
    h = std::max(1, round_half_even(w / ratio.first));
  } else if (in_ratio > ratio.second) {
    w = std::max(1, round_half_even(h * ratio.second));
  }
  h = std::min(h, height);
  w = std::min(w, width);
  return cv::Rect((width - w) / 2, (height - h) / 2, w, h);
}

RandomResizedCrop::RandomResizedCrop(cv::Size size, std::pair<double, double> scale,
                                     std::pair<double, double> ratio)
    : size_(size), scale_(scale), ratio_(ratio) {
  check_size(size, "RandomResizedCrop");
  if (!(scale.first > 0 && scale.first <= scale.second && scale.second <= 1.0)) {
    throw ConfigError("RandomResizedCrop: scale range must satisfy 0 < lo <= hi <= 1");
  }
  if (!(ratio.first > 0 && ratio.first <= ratio.second && std::isfinite(ratio.second))) {
    throw ConfigError("RandomResizedCrop: ratio range must satisfy 0 < lo <= hi < inf");
  }
}

cv::Rect RandomResizedCrop::plan_region(cv::Size source, Rng& rng,
                                        TransformLog* log) const {
  if (source.width <= 0 || source.height <= 0) {
    throw DataError("RandomResizedCrop: empty image");
  }
  cv::Rect r = draw_resized_crop(source, scale_, ratio_, rng);
  if (log) {
    log->record("rrc", "left", r.x);
    log->record("rrc", "top", r.y);
    log->record("rrc", "width", r.width);
    log->record("rrc", "height", r.height);
  }
  return r;
}

int RandomResizedCrop::max_reduction(cv::Rect region) const {
  for (int r : {8, 4, 2}) {
    if (region.width >= r * size_.width && region.height >= r * size_.height) return r;
  }
  return 1;
}

cv::Mat RandomResizedCrop::apply_region(const cv::Mat& decoded, cv::Rect2d region) const {
  ResampleBox box;
  const cv::Mat pixels = window_pixels(decoded, region, &box);
  cv::Mat out;
  thread_resampler().resize(pixels, box, size_, out);
  return out;
}

cv::Mat RandomResizedCrop::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  require_nonempty(image, "RandomResizedCrop");
  return apply_region(image, cv::Rect2d(plan_region(image.size(), rng, log)));
}

std::string RandomResizedCrop::describe() const {
  std::ostringstream out;
  out << "RandomResizedCrop(" << size_text(size_) << ", scale=(" << scale_.first << ", "
      << scale_.second << "), ratio=(" << ratio_.first << ", " << ratio_.second << "))";
  return out.str();
}

RandomCrop::RandomCrop(cv::Size size, int padding) : size_(size), padding_(padding) {
  check_size(size, "RandomCrop");
  if (padding < 0 || padding > kMaxTransformSide) {
    throw ConfigError("RandomCrop: padding must be in [0, " +
                      std::to_string(kMaxTransformSide) + "]");
  }
}

cv::Mat RandomCrop::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  require_nonempty(image, "RandomCrop");
  if (padding_ > 0) {
    check_pixels(std::uint64_t(image.cols) + 2 * std::uint64_t(padding_),
                 std::uint64_t(image.rows) + 2 * std::uint64_t(padding_), "RandomCrop");
    cv::Mat padded;
    cv::copyMakeBorder(image, padded, padding_, padding_, padding_, padding_,
                       cv::BORDER_CONSTANT, cv::Scalar::all(0));
    image = padded;
  }
  if (image.cols < size_.width || image.rows < size_.height) {
    throw DataError("RandomCrop: image " + size_text(image.size()) +
                    " (after padding) is smaller than the crop " + size_text(size_));
  }
  const int top = static_cast<int>(bounded(rng, image.rows - size_.height + 1));
  const int left = static_cast<int>(bounded(rng, image.cols - size_.width + 1));
  if (log) {
    log->record("crop", "top", top);
    log->record("crop", "left", left);
  }
  return image(cv::Rect(left, top, size_.width, size_.height)).clone();
}

std::string RandomCrop::describe() const {
  return "RandomCrop(" + size_text(size_) + ", padding=" + std::to_string(padding_) + ")";
}

CenterCrop::CenterCrop(cv::Size size) : size_(size) { check_size(size, "CenterCrop"); }

cv::Mat CenterCrop::apply(cv::Mat image, Rng&, TransformLog*) const {
  require_nonempty(image, "CenterCrop");
  if (image.cols >= size_.width && image.rows >= size_.height) {
    const int top = round_half_even((image.rows - size_.height) / 2.0);
    const int left = round_half_even((image.cols - size_.width) / 2.0);
    return image(cv::Rect(left, top, size_.width, size_.height)).clone();
  }
  // Zero padding around the centre, as torchvision does, written straight into
  // the output: a padded copy of the whole input would be max(W, w) x max(H, h),
  // far above the output's size for a long thin image. torchvision pads by
  // floor((out - in) / 2) before, and crops a longer side at round((in - out) / 2).
  const auto place = [](int in, int out, int* src, int* dst) {
    *src = in >= out ? round_half_even((in - out) / 2.0) : 0;
    *dst = in >= out ? 0 : (out - in) / 2;
    return std::min(in, out);
  };
  int src_x, dst_x, src_y, dst_y;
  const int w = place(image.cols, size_.width, &src_x, &dst_x);
  const int h = place(image.rows, size_.height, &src_y, &dst_y);
  cv::Mat out(size_, image.type(), cv::Scalar::all(0));
  image(cv::Rect(src_x, src_y, w, h)).copyTo(out(cv::Rect(dst_x, dst_y, w, h)));
  return out;
}

std::string CenterCrop::describe() const {
  return "CenterCrop(" + size_text(size_) + ")";
}

Resize::Resize(cv::Size size) : size_(size) { check_size(size, "Resize"); }

Resize Resize::shorter_side(int side) {
  check_size(cv::Size(side, side), "Resize");
  return Resize(cv::Size(0, 0), side);
}

cv::Size Resize::output_size(cv::Size in) const {
  if (shorter_ == 0) return size_;
  if (in.width <= 0 || in.height <= 0) return {0, 0};
  if (in.width <= in.height) {
    const std::uint64_t longer = std::uint64_t(shorter_) * in.height / in.width;
    check_pixels(shorter_, longer, "Resize");
    return {shorter_, static_cast<int>(longer)};
  }
  const std::uint64_t longer = std::uint64_t(shorter_) * in.width / in.height;
  check_pixels(longer, shorter_, "Resize");
  return {static_cast<int>(longer), shorter_};
}

cv::Mat Resize::apply(cv::Mat image, Rng&, TransformLog*) const {
  require_nonempty(image, "Resize");
  return resize_to(image, output_size(image.size()));
}

std::string Resize::describe() const {
  if (shorter_ != 0) return "Resize(shorter side " + std::to_string(shorter_) + ")";
  return "Resize(" + size_text(size_) + ")";
}

}  // namespace seedloader
