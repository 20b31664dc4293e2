// Compiled with -ffp-contract=off: torch_linspace_at fuses exactly where torch's
// kernel does (std::fma) and nowhere else.
#include "transforms/auto_augment.h"

#include <cmath>
#include <sstream>

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {
namespace {

constexpr int kMaxBins = 1024;

float linspace_scalar(float start, float end, float step, int steps, int i) {
  return i < steps / 2 ? std::fma(step, static_cast<float>(i), start)
                       : std::fma(-step, static_cast<float>(steps - i - 1), end);
}

// Posterize's bits: 8 - round(i / ((bins - 1) / spread)) with torch's float32
// division and halves to even.
double posterize_bits(int bins, int bin, double spread) {
  const float q = static_cast<float>((bins - 1) / spread);
  return 8.0 - std::nearbyint(static_cast<float>(bin) / q);
}

cv::Mat log_and_apply(const cv::Mat& image, AugmentOp op, double magnitude,
                      std::string_view transform, TransformLog* log) {
  if (log) {
    log->record(transform, "op", static_cast<double>(op));
    log->record(transform, "magnitude", magnitude);
  }
  return apply_augment_op(image, op, magnitude);
}

}  // namespace

float torch_linspace_at(float start, float end, int steps, int i) {
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  // torch's vectorised loop takes two vectors of 8 at a time; the tail is scalar.
  constexpr int kVector = 8;
  if (i >= steps / (2 * kVector) * (2 * kVector)) {
    return linspace_scalar(start, end, step, steps, i);
  }
  const int first = i - i % kVector;
  const float base = linspace_scalar(start, end, step, steps, first);
  const float offset = static_cast<float>(i % kVector) * step;
  return base + offset;
}

bool augment_op_has_magnitudes(AugmentOp op) {
  return op != AugmentOp::kIdentity && op != AugmentOp::kAutoContrast &&
         op != AugmentOp::kEqualize;
}

bool augment_op_signed(AugmentOp op) {
  return augment_op_has_magnitudes(op) && op != AugmentOp::kPosterize &&
         op != AugmentOp::kSolarize;
}

double augment_magnitude(AugmentPolicy policy, AugmentOp op, int bins, int bin,
                         cv::Size image) {
  const bool wide = policy == AugmentPolicy::kTrivialAugmentWide;
  const auto up_to = [&](double end) {
    return static_cast<double>(
        torch_linspace_at(0.0f, static_cast<float>(end), bins, bin));
  };
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
      return up_to(wide ? 0.99 : 0.3);
    case AugmentOp::kTranslateX:
      return up_to(wide ? 32.0 : 150.0 / 331.0 * image.width);
    case AugmentOp::kTranslateY:
      return up_to(wide ? 32.0 : 150.0 / 331.0 * image.height);
    case AugmentOp::kRotate:
      return up_to(wide ? 135.0 : 30.0);
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness:
      return up_to(wide ? 0.99 : 0.9);
    case AugmentOp::kPosterize:
      return posterize_bits(bins, bin, wide ? 6.0 : 4.0);
    case AugmentOp::kSolarize:
      return static_cast<double>(torch_linspace_at(255.0f, 0.0f, bins, bin));
    default:
      return 0.0;
  }
}

TrivialAugmentWide::TrivialAugmentWide(int bins) : bins_(bins) {
  if (bins < 2 || bins > kMaxBins) {
    throw ConfigError("TrivialAugmentWide: the number of magnitude bins must be in [2, " +
                      std::to_string(kMaxBins) + "], got " + std::to_string(bins));
  }
}

cv::Mat TrivialAugmentWide::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  const auto op = static_cast<AugmentOp>(bounded(rng, kAugmentOpCount));
  double magnitude = 0;
  if (augment_op_has_magnitudes(op)) {
    const int bin = static_cast<int>(bounded(rng, static_cast<std::uint64_t>(bins_)));
    magnitude = augment_magnitude(AugmentPolicy::kTrivialAugmentWide, op, bins_, bin,
                                  image.size());
  }
  if (augment_op_signed(op) && bounded(rng, 2) == 1) magnitude = -magnitude;
  return log_and_apply(image, op, magnitude, "trivialaugment", log);
}

std::string TrivialAugmentWide::describe() const {
  return "TrivialAugmentWide(num_magnitude_bins=" + std::to_string(bins_) + ")";
}

RandAugment::RandAugment(int num_ops, int magnitude, int bins)
    : num_ops_(num_ops), magnitude_(magnitude), bins_(bins) {
  if (num_ops < 0 || num_ops > 16) {
    throw ConfigError("RandAugment: num_ops must be in [0, 16], got " +
                      std::to_string(num_ops));
  }
  if (bins < 2 || bins > kMaxBins) {
    throw ConfigError("RandAugment: the number of magnitude bins must be in [2, " +
                      std::to_string(kMaxBins) + "], got " + std::to_string(bins));
  }
  if (magnitude < 0 || magnitude >= bins) {
    throw ConfigError("RandAugment: magnitude must be in [0, " +
                      std::to_string(bins - 1) + "] for " + std::to_string(bins) +
                      " bins, got " + std::to_string(magnitude));
  }
}

cv::Mat RandAugment::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  for (int i = 0; i < num_ops_; ++i) {
    const auto op = static_cast<AugmentOp>(bounded(rng, kAugmentOpCount));
    double magnitude = augment_magnitude(AugmentPolicy::kRandAugment, op, bins_,
                                         magnitude_, image.size());
    if (augment_op_signed(op) && bounded(rng, 2) == 1) magnitude = -magnitude;
    image = log_and_apply(image, op, magnitude, "randaugment", log);
  }
  return image;
}

std::string RandAugment::describe() const {
  std::ostringstream out;
  out << "RandAugment(num_ops=" << num_ops_ << ", magnitude=" << magnitude_
      << ", num_magnitude_bins=" << bins_ << ")";
  return out.str();
}

}  // namespace seedloader
