#include "loader/datasets/synthetic.h"

#include "rng/error.h"

namespace seedloader {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Validates the shape before anything is built from it; returns c.
int checked_shape(std::uint64_t n, int h, int w, int c, int classes) {
  if (n == 0 || h <= 0 || w <= 0 || classes <= 0) {
    throw ConfigError("Synthetic: n, h, w and classes must be positive");
  }
  if (c != 1 && c != 3) throw ConfigError("Synthetic: channels must be 1 or 3");
  return c;
}

}  // namespace

Synthetic::Synthetic(std::uint64_t n, int h, int w, int c, Compose transform, int classes)
    : n_(n),
      h_(h),
      w_(w),
      c_(checked_shape(n, h, w, c, classes)),
      classes_(classes),
      output_(std::move(transform), c, {w, h}, "Synthetic") {
  layout_ =
      SampleLayout({output_.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
}

std::string Synthetic::describe() const {
  return "Synthetic(" + std::to_string(n_) + ", " + std::to_string(h_) + "x" +
         std::to_string(w_) + "x" + std::to_string(c_) + ")";
}

cv::Mat Synthetic::image(std::uint64_t index) const {
  const std::uint64_t seed = mix(index);
  const int dx = static_cast<int>(seed & 7) - 3;
  const int dy = static_cast<int>((seed >> 3) & 7) - 3;
  cv::Mat image(h_, w_, CV_8UC(c_));
  for (int y = 0; y < h_; ++y) {
    std::uint8_t* row = image.ptr<std::uint8_t>(y);
    for (int x = 0; x < w_; ++x) {
      const std::uint64_t texture = mix(seed ^ (static_cast<std::uint64_t>(y) << 32 | x));
      for (int ch = 0; ch < c_; ++ch) {
        const int base = static_cast<int>((seed >> (8 + 8 * ch)) & 0xff);
        const int value =
            base + dx * x + dy * y + static_cast<int>((texture >> (8 * ch)) & 15);
        row[x * c_ + ch] = static_cast<std::uint8_t>(value & 0xff);
      }
    }
  }
  return image;
}

void Synthetic::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  if (index >= n_) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  try {
    output_.write(image(index), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = static_cast<std::int64_t>(index % classes_);
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index));
  }
}

}  // namespace seedloader
