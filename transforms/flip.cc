#include "transforms/flip.h"

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {

RandomFlip::RandomFlip(Axis axis, double p) : axis_(axis), p_(p) {
  if (!(p >= 0.0 && p <= 1.0)) throw ConfigError("flip: p must be in [0, 1]");
}

bool RandomFlip::draw(Rng& rng, TransformLog* log) const {
  const bool flip = bernoulli(rng, p_);
  const char* name = axis_ == Axis::kHorizontal ? "hflip" : "vflip";
  if (log) log->record(name, "flip", flip ? 1.0 : 0.0);
  return flip;
}

cv::Mat RandomFlip::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  if (!draw(rng, log)) return image;
  cv::Mat out;
  cv::flip(image, out, axis_ == Axis::kHorizontal ? 1 : 0);
  return out;
}

std::string RandomFlip::describe() const {
  return std::string(axis_ == Axis::kHorizontal ? "RandomHorizontalFlip"
                                                : "RandomVerticalFlip") +
         "(p=" + std::to_string(p_) + ")";
}

}  // namespace seedloader
