// Every vector level of the resampler's kernels computes the portable kernels'
// bytes, on random filters, rows and widths (odd ones, rows ending where a
// vector load would leave them, mirrored or not, sums clipped at both ends).
#include "transforms/resample_kernels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace seedloader::resample {
namespace {

std::vector<SimdLevel> vector_levels() {
  std::vector<SimdLevel> levels;
  if (__builtin_cpu_supports("sse4.1")) levels.push_back(SimdLevel::kSse41);
  if (__builtin_cpu_supports("avx2")) levels.push_back(SimdLevel::kAvx2);
  return levels;
}

// A random horizontal filter: output j takes 1..taps source pixels, weights
// summing to about 2^22 (some well over it, so sums clip at 255).
struct Filter {
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;
  int taps;
};

Filter random_filter(std::mt19937_64& g, int outputs, int cols) {
  Filter f;
  f.taps = 1 + int(g() % 9);
  f.first.resize(outputs);
  f.count.resize(outputs);
  f.weights.assign(std::size_t(outputs) * f.taps, 0);
  for (int j = 0; j < outputs; ++j) {
    f.count[j] = 1 + int(g() % std::min<std::uint64_t>(f.taps, cols));
    f.first[j] = int(g() % (cols - f.count[j] + 1));
    const std::int32_t total =
        (std::int32_t{1} << kPrecisionBits) + int(g() % 3) * 700000;
    for (int t = 0; t < f.count[j]; ++t) {
      f.weights[std::size_t(j) * f.taps + t] =
          std::int32_t(g() % (total / f.count[j] + 1));
    }
  }
  return f;
}

std::vector<std::uint8_t> random_bytes(std::mt19937_64& g, std::size_t n) {
  std::vector<std::uint8_t> bytes(n);
  for (auto& b : bytes) {
    const auto r = g() % 8;
    b = r == 0 ? 0 : r == 1 ? 255 : std::uint8_t(g());
  }
  return bytes;
}

TEST(ResampleKernelsTest, EveryLevelMakesThePortableRowsOfTheHorizontalPass) {
  std::mt19937_64 g(7);
  for (int round = 0; round < 400; ++round) {
    const int cols = 1 + int(g() % 120);
    const int width = 1 + int(g() % 40);
    const int rows = g() % 2 ? 4 : 1 + int(g() % 3);
    const Filter f = random_filter(g, width, cols);
    const RowPass pass{{f.first.data(), f.count.data(), f.weights.data(), f.taps},
                       width,
                       cols,
                       g() % 2 == 0};
    // Source rows exactly `cols` pixels long with nothing after the last, so
    // a load past a row's end shows up under the address sanitizer.
    std::vector<std::vector<std::uint8_t>> source(rows);
    const std::uint8_t* in[4];
    for (int r = 0; r < rows; ++r) {
      source[r] = random_bytes(g, std::size_t(cols) * 3);
      in[r] = source[r].data();
    }
    const auto run = [&](SimdLevel level) {
      std::vector<std::int16_t> wide;
      prepare_rows3(level, pass, wide);
      std::vector<std::vector<std::uint8_t>> planes(rows);
      std::uint8_t* out[4];
      for (int r = 0; r < rows; ++r) {
        planes[r].assign(std::size_t(width) * 3, 0);
        out[r] = planes[r].data();
      }
      rows3(level, pass, wide, in, out, rows);
      return planes;
    };
    const auto expected = run(SimdLevel::kOff);
    for (const SimdLevel level : vector_levels()) {
      ASSERT_EQ(run(level), expected)
          << simd_level_name(level) << ", round " << round << ": " << cols << " -> "
          << width << " pixels, " << f.taps << " taps, mirror " << pass.mirror;
    }
  }
}

TEST(ResampleKernelsTest, EveryLevelMakesThePortableRowsOfTheVerticalPass) {
  std::mt19937_64 g(11);
  for (int round = 0; round < 300; ++round) {
    const int count = 1 + int(g() % 9);
    const int width = 8 * (1 + int(g() % 12));
    const int channels = g() % 2 ? 3 : 1;
    const int elems = g() % 2 ? width * channels : 1 + int(g() % 90);
    const std::size_t stride = std::size_t(elems) + g() % 5;
    const auto in = random_bytes(g, stride * count + kSlack);
    const Filter f = random_filter(g, 1, count);
    std::vector<std::int32_t> k(count, 0);
    for (int t = 0; t < f.count[0]; ++t) k[f.first[0] + t] = f.weights[t];
    std::vector<std::uint8_t> expected(elems + kSlack);
    column(SimdLevel::kOff, in.data(), stride, k.data(), count, elems, expected.data());
    expected.resize(elems);
    for (const SimdLevel level : vector_levels()) {
      std::vector<std::uint8_t> got(elems + kSlack);
      column(level, in.data(), stride, k.data(), count, elems, got.data());
      got.resize(elems);
      ASSERT_EQ(got, expected) << simd_level_name(level) << ", round " << round;
    }
    if (elems != width * channels) continue;
    // The float32 output: v * scale + shift, rounded twice.
    const float scale[3] = {1.0f / 58.395f, 1.0f / 57.12f, 0.0171f};
    const float shift[3] = {-2.1179f, -2.0357f, -1.8044f};
    const std::size_t plane = std::size_t(width) * 5;
    std::vector<float> want(plane * channels, -7.0f);
    for (int c = 0; c < channels; ++c) {
      for (int x = 0; x < width; ++x) {
        const float scaled = float(expected[std::size_t(c) * width + x]) * scale[c];
        want[c * plane + x] = scaled + shift[c];
      }
    }
    for (const SimdLevel level : vector_levels()) {
      std::vector<float> got(plane * channels, -7.0f);
      column_f32(level, in.data(), stride, k.data(), count, width, channels, scale, shift,
                 got.data(), plane);
      ASSERT_EQ(got, want) << simd_level_name(level) << ", round " << round;
    }
  }
}

TEST(ResampleKernelsTest, EveryLevelInterleavesThePlanesIntoPixels) {
  std::mt19937_64 g(13);
  for (int width = 1; width < 70; ++width) {
    const auto planes = random_bytes(g, std::size_t(width) * 3);
    std::vector<std::uint8_t> expected(std::size_t(width) * 3);
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) expected[3 * x + c] = planes[c * width + x];
    }
    for (const SimdLevel level : {SimdLevel::kOff, SimdLevel::kSse41, SimdLevel::kAvx2}) {
      if (level != SimdLevel::kOff && vector_levels().empty()) continue;
      std::vector<std::uint8_t> got(expected.size());
      interleave3(level, planes.data(), width, got.data());
      ASSERT_EQ(got, expected) << simd_level_name(level) << ", width " << width;
    }
  }
}

}  // namespace
}  // namespace seedloader::resample
