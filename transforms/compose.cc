#include "seedloader/transforms/compose.h"

#include "seedloader/error.h"
#include "seedloader/half.h"
#include "transforms/crop.h"
#include "transforms/flip.h"
#include "transforms/resample.h"

namespace seedloader {

Compose::Compose(std::vector<std::unique_ptr<Transform>> steps, ToTensor output)
    : steps_(std::move(steps)), output_(std::move(output)) {
  for (const auto& step : steps_) {
    if (!step) throw ConfigError("Compose: null transform");
  }
}

cv::Mat Compose::apply(cv::Mat image, Rng& rng, TransformLog* log) const {
  for (const auto& step : steps_) image = step->apply(std::move(image), rng, log);
  return image;
}

cv::Mat Compose::decode_planned(const ImageSource& source, Rng& rng, TransformLog* log,
                                int* reduction_used, cv::Rect2d* region_out) const {
  if (steps_.empty() || !steps_.front()->plans_region()) {
    if (reduction_used) *reduction_used = 1;
    cv::Mat decoded = source.decode(1);
    *region_out = cv::Rect2d(0, 0, decoded.cols, decoded.rows);
    return decoded;
  }
  const Transform& first = *steps_.front();
  const cv::Rect region = first.plan_region(source.size(), rng, log);
  const int reduction = first.max_reduction(region);
  if (reduction_used) *reduction_used = reduction;
  cv::Rect scaled;
  cv::Mat decoded = source.decode_region(reduction, region, &scaled);
  if ((scaled & cv::Rect(0, 0, decoded.cols, decoded.rows)) != scaled) {
    throw DataError("decoded image " + std::to_string(decoded.cols) + "x" +
                    std::to_string(decoded.rows) + " is smaller than its header said");
  }
  *region_out = exact_region(region, reduction, scaled);
  return decoded;
}

cv::Mat Compose::apply(const ImageSource& source, Rng& rng, TransformLog* log,
                       int* reduction_used) const {
  cv::Rect2d region;
  cv::Mat image = decode_planned(source, rng, log, reduction_used, &region);
  if (steps_.empty() || !steps_.front()->plans_region()) {
    return apply(std::move(image), rng, log);
  }
  image = steps_.front()->apply_region(image, region);
  for (std::size_t i = 1; i < steps_.size(); ++i) {
    image = steps_[i]->apply(std::move(image), rng, log);
  }
  return image;
}

bool Compose::fuses() const {
  if (steps_.empty() || steps_.size() > 2) return false;
  if (!dynamic_cast<const RandomResizedCrop*>(steps_[0].get())) return false;
  if (steps_.size() == 1) return true;
  const auto* flip = dynamic_cast<const RandomFlip*>(steps_[1].get());
  return flip && flip->axis() == RandomFlip::Axis::kHorizontal;
}

template <typename T>
void Compose::write_fused(const ImageSource& source, Rng& rng, TransformLog* log,
                          std::span<T> out) const {
  if (!fuses()) throw ConfigError("Compose: " + describe() + " has no fused path");
  const auto& crop = static_cast<const RandomResizedCrop&>(*steps_[0]);
  cv::Rect2d region;
  const cv::Mat decoded = decode_planned(source, rng, log, nullptr, &region);
  // The flip draws after the decode, as in apply(): a sample that fails to
  // decode leaves the stream where the unfused chain leaves it.
  const bool mirror =
      steps_.size() == 2 && static_cast<const RandomFlip&>(*steps_[1]).draw(rng, log);
  ResampleBox box;
  const cv::Mat pixels = window_pixels(decoded, region, &box);
  thread_resampler().resize_planes(pixels, box, crop.size(), mirror, output_, out);
}

template void Compose::write_fused(const ImageSource&, Rng&, TransformLog*,
                                   std::span<float>) const;
template void Compose::write_fused(const ImageSource&, Rng&, TransformLog*,
                                   std::span<Float16>) const;
template void Compose::write_fused(const ImageSource&, Rng&, TransformLog*,
                                   std::span<BFloat16>) const;
template void Compose::write_fused(const ImageSource&, Rng&, TransformLog*,
                                   std::span<std::uint8_t>) const;

cv::Size Compose::output_size(cv::Size in) const {
  for (const auto& step : steps_) in = step->output_size(in);
  return in;
}

std::string Compose::describe() const {
  std::string out = "Compose(";
  for (const auto& step : steps_) out += step->describe() + ", ";
  return out + output_.describe() + ")";
}

}  // namespace seedloader
