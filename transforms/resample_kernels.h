// The resampler's inner loops (resample.h): the horizontal pass over source
// rows and the vertical pass over the horizontal pass' rows, in 22-bit fixed
// point, at three levels that compute the same integers:
//   kOff    portable C++ (the reference);
//   kSse41  four output pixels (or 4-byte groups) at a time, pmaddwd/pmulld;
//   kAvx2   the same sums two pixels (or 8 bytes) to a 256-bit vector.
// The level is the best this CPU has, capped by SEEDLOADER_SIMD=off|sse41|avx2;
// the pixel-dispatch test runs the pixel dump at every level and requires the
// same bytes. Plain functions over caller-owned buffers; safe across threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace seedloader::resample {

// Pillow's 8-bit precision: a 255 * weight sum stays inside int32 with room for
// negative lobes (none here: the triangle is never negative).
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr std::int32_t kHalf = std::int32_t{1} << (kPrecisionBits - 1);
// Bytes the vector kernels may read and write past a row's end: the buffers
// they work on keep this much room after their last row.
constexpr std::size_t kSlack = 16;

enum class SimdLevel { kOff, kSse41, kAvx2 };

// The level in use (read once per process). Throws ConfigError when
// SEEDLOADER_SIMD holds anything but off, sse41 or avx2; a level this CPU lacks
// falls back to the best below it.
SimdLevel simd_level();
const char* simd_level_name(SimdLevel level);

// One axis' filter as the kernels read it: output i takes count[i] source
// pixels from first[i], weighted by weights[i * taps ...] (zero beyond count).
struct Taps {
  const int* first;
  const int* count;
  const std::int32_t* weights;
  int taps;
};

// The horizontal pass writes output pixel j from source pixel x = mirror ?
// width - 1 - j : j, each row as C planes of `width` bytes.
struct RowPass {
  Taps h;
  int width;  // output pixels per row
  int cols;   // source pixels per row
  bool mirror;
};

// Weights for rows3() at `level`, laid out in `wide` (h.weights split into
// int16 halves for pmaddwd; nothing at kOff).
void prepare_rows3(SimdLevel level, const RowPass& pass, std::vector<std::int16_t>& wide);

// `rows` source rows (in[r], 3 channels) through the horizontal pass into
// out[r]. REQUIRES: prepare_rows3(level, pass, wide) since pass last changed.
void rows3(SimdLevel level, const RowPass& pass, const std::vector<std::int16_t>& wide,
           const std::uint8_t* const* in, std::uint8_t* const* out, int rows);
// One single-channel source row through the horizontal pass (portable).
void row1(const RowPass& pass, const std::uint8_t* in, std::uint8_t* out);

// One output row of the vertical pass: `count` rows of `elems` bytes, `stride`
// apart from `in`, weighted by k, clipped into out. Reads and writes up to
// kSlack - 1 bytes past the rows' ends.
void column(SimdLevel level, const std::uint8_t* in, std::size_t stride,
            const std::int32_t* k, int count, int elems, std::uint8_t* out);

// column() for a float32 output: each clipped byte v of channel c of `in` (C
// planes of `width` bytes) becomes v * scale[c] + shift[c] (multiply, then add:
// ToTensor::affine()'s two roundings), stored at out + c * plane.
// REQUIRES: level is not kOff; width is a multiple of 8.
void column_f32(SimdLevel level, const std::uint8_t* in, std::size_t stride,
                const std::int32_t* k, int count, int width, int channels,
                const float* scale, const float* shift, float* out, std::size_t plane);

// Three planes of `width` bytes (at planes, + width, + 2 * width) interleaved
// into `width` pixels of 3 bytes at out.
void interleave3(SimdLevel level, const std::uint8_t* planes, int width,
                 std::uint8_t* out);

}  // namespace seedloader::resample
