#include "seedloader/datasets/synthetic.h"

#include "loader/datasets/image_output.h"
#include "seedloader/error.h"

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

struct Synthetic::State {
  State(std::uint64_t n, int h, int w, int c, Compose transform, int classes)
      : n(n),
        h(h),
        w(w),
        c(checked_shape(n, h, w, c, classes)),
        classes(classes),
        output(std::move(transform), c, {w, h}, "Synthetic"),
        layout({output.field("image"), FieldSpec{"label", DType::kI64, {}, false}}) {}

  std::uint64_t n;
  int h, w, c, classes;
  ImageOutput output;
  SampleLayout layout;
};

Synthetic::Synthetic(std::uint64_t n, int h, int w, int c, Compose transform, int classes)
    : state_(std::make_unique<const State>(n, h, w, c, std::move(transform), classes)) {}

Synthetic::~Synthetic() = default;

std::uint64_t Synthetic::size() const { return state_->n; }

const SampleLayout& Synthetic::layout() const { return state_->layout; }

std::string Synthetic::describe() const {
  const State& s = *state_;
  return "Synthetic(" + std::to_string(s.n) + ", " + std::to_string(s.h) + "x" +
         std::to_string(s.w) + "x" + std::to_string(s.c) + ")";
}

cv::Mat Synthetic::image(std::uint64_t index) const {
  const int h = state_->h, w = state_->w, c = state_->c;
  const std::uint64_t seed = mix(index);
  const int dx = static_cast<int>(seed & 7) - 3;
  const int dy = static_cast<int>((seed >> 3) & 7) - 3;
  cv::Mat image(h, w, CV_8UC(c));
  for (int y = 0; y < h; ++y) {
    std::uint8_t* row = image.ptr<std::uint8_t>(y);
    for (int x = 0; x < w; ++x) {
      const std::uint64_t texture = mix(seed ^ (static_cast<std::uint64_t>(y) << 32 | x));
      for (int ch = 0; ch < c; ++ch) {
        const int base = static_cast<int>((seed >> (8 + 8 * ch)) & 0xff);
        const int value =
            base + dx * x + dy * y + static_cast<int>((texture >> (8 * ch)) & 15);
        row[x * c + ch] = static_cast<std::uint8_t>(value & 0xff);
      }
    }
  }
  return image;
}

void Synthetic::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const State& s = *state_;
  if (index >= s.n) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  try {
    s.output.write(image(index), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = static_cast<std::int64_t>(index % s.classes);
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index));
  }
}

}  // namespace seedloader
