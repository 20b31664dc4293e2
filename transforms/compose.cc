#include "seedloader/transforms/compose.h"

#include "seedloader/error.h"

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

cv::Mat Compose::apply(const ImageSource& source, Rng& rng, TransformLog* log,
                       int* reduction_used) const {
  if (steps_.empty() || !steps_.front()->plans_region()) {
    if (reduction_used) *reduction_used = 1;
    return apply(source.decode(1), rng, log);
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
  cv::Mat image = first.apply_region(decoded, scaled);
  for (std::size_t i = 1; i < steps_.size(); ++i) {
    image = steps_[i]->apply(std::move(image), rng, log);
  }
  return image;
}

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
