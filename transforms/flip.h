// RandomHorizontalFlip and RandomVerticalFlip: mirror the image with probability p.
// One Bernoulli draw per call whatever p is, so the stream advances the same way.
// Immutable; safe to share across threads and processes.
#pragma once

#include "seedloader/transforms/transform.h"

namespace seedloader {

class RandomFlip final : public Transform {
 public:
  enum class Axis { kHorizontal, kVertical };
  // Throws ConfigError unless 0 <= p <= 1.
  RandomFlip(Axis axis, double p);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;
  // apply()'s one draw (and its log entry): whether to mirror.
  bool draw(Rng& rng, TransformLog* log) const;
  Axis axis() const { return axis_; }

 private:
  Axis axis_;
  double p_;
};

inline RandomFlip RandomHorizontalFlip(double p = 0.5) {
  return RandomFlip(RandomFlip::Axis::kHorizontal, p);
}
inline RandomFlip RandomVerticalFlip(double p = 0.5) {
  return RandomFlip(RandomFlip::Axis::kVertical, p);
}

}  // namespace seedloader
