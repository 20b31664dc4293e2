#include "seedloader/transforms/transform.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "seedloader/error.h"

namespace seedloader {

double TransformLog::value(std::string_view transform, std::string_view name) const {
  for (const DrawnParam& p : entries_) {
    if (p.transform == transform && p.name == name) return p.value;
  }
  throw ConfigError("no parameter " + std::string(transform) + "." + std::string(name) +
                    " was drawn");
}

std::string TransformLog::to_string() const {
  std::ostringstream out;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (i) out << ' ';
    out << entries_[i].transform << '.' << entries_[i].name << '=' << entries_[i].value;
  }
  return out.str();
}

cv::Rect Transform::plan_region(cv::Size source, Rng&, TransformLog*) const {
  return cv::Rect(0, 0, source.width, source.height);
}

int Transform::max_reduction(cv::Rect) const { return 1; }

cv::Mat Transform::apply_region(const cv::Mat& decoded, cv::Rect2d region) const {
  return decoded(enclosing_rect(region, decoded.size())).clone();
}

cv::Mat ImageSource::decode_region(int reduction, cv::Rect region, cv::Rect* crop) const {
  cv::Mat decoded = decode(reduction);
  *crop = reduction == 1 ? region : scale_region(region, reduction, decoded.size());
  return decoded;
}

cv::Rect scale_region(cv::Rect region, int reduction, cv::Size decoded) {
  int x0 = region.x / reduction;
  int y0 = region.y / reduction;
  int x1 = (region.x + region.width + reduction - 1) / reduction;
  int y1 = (region.y + region.height + reduction - 1) / reduction;
  x0 = std::clamp(x0, 0, std::max(decoded.width - 1, 0));
  y0 = std::clamp(y0, 0, std::max(decoded.height - 1, 0));
  x1 = std::clamp(x1, x0 + 1, std::max(decoded.width, x0 + 1));
  y1 = std::clamp(y1, y0 + 1, std::max(decoded.height, y0 + 1));
  return cv::Rect(x0, y0, x1 - x0, y1 - y0);
}

cv::Rect2d exact_region(cv::Rect region, int reduction, cv::Rect scaled) {
  if (reduction == 1) return cv::Rect2d(scaled);
  const double r = reduction;
  const double x = scaled.x + (region.x / r - region.x / reduction);
  const double y = scaled.y + (region.y / r - region.y / reduction);
  const double x1 = std::min(x + region.width / r, double(scaled.x + scaled.width));
  const double y1 = std::min(y + region.height / r, double(scaled.y + scaled.height));
  return cv::Rect2d(x, y, x1 - x, y1 - y);
}

cv::Rect enclosing_rect(cv::Rect2d window, cv::Size bounds) {
  const int x0 = std::max(0, static_cast<int>(std::floor(window.x)));
  const int y0 = std::max(0, static_cast<int>(std::floor(window.y)));
  const int x1 =
      std::min(bounds.width, static_cast<int>(std::ceil(window.x + window.width)));
  const int y1 =
      std::min(bounds.height, static_cast<int>(std::ceil(window.y + window.height)));
  return cv::Rect(x0, y0, std::max(x1 - x0, 0), std::max(y1 - y0, 0));
}

}  // namespace seedloader
