#include "transforms/erasing.h"

#include <cmath>
#include <sstream>

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {

RandomErasing::RandomErasing(double p, std::pair<double, double> scale,
                             std::pair<double, double> ratio, double value)
    : p_(p), scale_(scale), ratio_(ratio), value_(value) {
  if (!(p >= 0 && p <= 1)) throw ConfigError("RandomErasing: p must be in [0, 1]");
  if (!(scale.first > 0 && scale.first <= scale.second && scale.second <= 1))
    throw ConfigError("RandomErasing: scale range must satisfy 0 < lo <= hi <= 1");
  if (!(ratio.first > 0 && ratio.first <= ratio.second && std::isfinite(ratio.second)))
    throw ConfigError("RandomErasing: ratio range must satisfy 0 < lo <= hi < inf");
  if (!(value >= 0 && value <= 255))
    throw ConfigError("RandomErasing: value must be in [0, 255] (pixel units)");
}

cv::Mat RandomErasing::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  const bool erase = bernoulli(rng, p_);
  if (log) log->record("erase", "erase", erase ? 1.0 : 0.0);
  if (!erase) return image;
  const int height = image.rows, width = image.cols;
  const double area = static_cast<double>(height) * width;
  const double log_lo = std::log(ratio_.first), log_hi = std::log(ratio_.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(rng, scale_.first, scale_.second);
    const double aspect = std::exp(uniform(rng, log_lo, log_hi));
    // Python's round(): halves to even.
    const double h = std::nearbyint(std::sqrt(target * aspect));
    const double w = std::nearbyint(std::sqrt(target / aspect));
    if (!(h < height && w < width)) continue;
    const int top =
        static_cast<int>(bounded(rng, static_cast<std::uint64_t>(height - h + 1)));
    const int left =
        static_cast<int>(bounded(rng, static_cast<std::uint64_t>(width - w + 1)));
    if (log) {
      log->record("erase", "top", top);
      log->record("erase", "left", left);
      log->record("erase", "height", h);
      log->record("erase", "width", w);
    }
    cv::Mat out = image.clone();  // the caller's image may be shared
    out(cv::Rect(left, top, static_cast<int>(w), static_cast<int>(h)))
        .setTo(cv::Scalar::all(value_));
    return out;
  }
  return image;
}

std::string RandomErasing::describe() const {
  std::ostringstream out;
  out << "RandomErasing(p=" << p_ << ", scale=(" << scale_.first << ", " << scale_.second
      << "), ratio=(" << ratio_.first << ", " << ratio_.second << "), value=" << value_
      << ")";
  return out.str();
}

}  // namespace seedloader
