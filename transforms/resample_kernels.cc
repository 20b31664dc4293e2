#include "transforms/resample_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <immintrin.h>

#include "seedloader/error.h"

namespace seedloader::resample {
namespace {

inline std::uint8_t clip8(std::int32_t v) {
  if (v >= (std::int32_t{1} << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

// ---- portable -------------------------------------------------------------

// One output pixel of the horizontal pass, C channels, into out[c * plane].
template <int C>
inline void pixel_portable(const std::uint8_t* p, const std::int32_t* k, int n,
                           std::uint8_t* out, int plane) {
  std::int32_t s[C];
  for (int c = 0; c < C; ++c) s[c] = kHalf;
  for (int t = 0; t < n; ++t, p += C) {
    for (int c = 0; c < C; ++c) s[c] += p[c] * k[t];
  }
  for (int c = 0; c < C; ++c) out[c * plane] = clip8(s[c]);
}

inline int source(const RowPass& pass, int j) {
  return pass.mirror ? pass.width - 1 - j : j;
}

// Output pixel j of one row, C channels, portably.
template <int C>
inline void output_portable(const RowPass& pass, const std::uint8_t* in,
                            std::uint8_t* out, int j) {
  const int x = source(pass, j);
  pixel_portable<C>(in + pass.h.first[x] * C,
                    pass.h.weights + std::size_t(x) * pass.h.taps, pass.h.count[x],
                    out + j, pass.width);
}

void column_portable(const std::uint8_t* in, std::size_t stride, const std::int32_t* k,
                     int count, int elems, std::uint8_t* out) {
  for (int i = 0; i < elems; ++i) {
    std::int32_t s = kHalf;
    for (int t = 0; t < count; ++t) s += in[t * stride + i] * k[t];
    out[i] = clip8(s);
  }
}

// Can a vector kernel read 8 bytes at each pair of taps of a pixel starting at
// source pixel `first` with `n` taps? (The last pair's load reaches 3 pixels
// past its taps.)
inline bool in_row(const RowPass& pass, int first, int n) {
  return first + n + 2 < pass.cols;
}

// Splits each 22-bit weight into its high and low 11 bits (both fit int16), as
// {w0, w1} pairs repeated for the three channels (R0 R1 G0 G1 B0 B1 0 0): the
// two pmaddwd sums recombine as high * 2^11 + low, the same integer as the
// 32-bit products' sum. `hi` and `lo` each take 8 int16.
void split_pair(const std::int32_t* k, int t, std::int16_t* hi, std::int16_t* lo) {
  for (int c = 0; c < 3; ++c) {
    hi[c * 2 + t % 2] = static_cast<std::int16_t>(k[t] >> 11);
    lo[c * 2 + t % 2] = static_cast<std::int16_t>(k[t] & 0x7ff);
  }
}

// ---- SSE4.1 ---------------------------------------------------------------

// Four sums clamped to [0, 255 << kPrecisionBits] and shifted down to 0..255.
__attribute__((target("sse4.1"))) inline __m128i clamp4(__m128i sums) {
  const __m128i top = _mm_set1_epi32((std::int32_t{1} << (kPrecisionBits + 8)) - 1);
  return _mm_srli_epi32(_mm_min_epi32(_mm_max_epi32(sums, _mm_setzero_si128()), top),
                        kPrecisionBits);
}

__attribute__((target("sse4.1"))) inline void store4(__m128i sums, std::uint8_t* out) {
  const __m128i v = clamp4(sums);
  const std::int32_t word =
      _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packus_epi32(v, v), v));
  std::memcpy(out, &word, 4);
}

// Bytes (R0 G0 B0 R1 G1 B1 ..) to int16 lanes (R0 R1 G0 G1 B0 B1 0 0).
#define SEEDLOADER_SPREAD 0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1

// One output pixel's fixed-point sums (R, G, B, 0) before rounding, two taps at
// a time: `k` holds, per pair of taps, the {hi, lo} vectors of split_pair().
__attribute__((target("sse4.1"))) inline __m128i pixel3_sse41(const std::uint8_t* p,
                                                              const __m128i* k, int n) {
  const __m128i spread = _mm_setr_epi8(SEEDLOADER_SPREAD);
  __m128i high = _mm_setzero_si128();
  __m128i low = _mm_setzero_si128();
  for (int t = 0; t < n; t += 2, p += 6, k += 2) {
    const __m128i px =
        _mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), spread);
    high = _mm_add_epi32(high, _mm_madd_epi16(px, _mm_loadu_si128(k)));
    low = _mm_add_epi32(low, _mm_madd_epi16(px, _mm_loadu_si128(k + 1)));
  }
  return _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32(high, 11), low),
                       _mm_set1_epi32(kHalf));
}

// Four output pixels' sums to planes: R0..R3, G0..G3, B0..B3 at out, out + width,
// out + 2 * width.
__attribute__((target("sse4.1"))) inline void store_planes4(const __m128i* sums,
                                                            std::uint8_t* out,
                                                            int width) {
  const __m128i planar =
      _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, -1, -1, -1, -1);
  const __m128i bytes = _mm_shuffle_epi8(
      _mm_packus_epi16(_mm_packus_epi32(clamp4(sums[0]), clamp4(sums[1])),
                       _mm_packus_epi32(clamp4(sums[2]), clamp4(sums[3]))),
      planar);
  const std::int32_t r = _mm_cvtsi128_si32(bytes);
  const std::int32_t g = _mm_extract_epi32(bytes, 1);
  const std::int32_t b = _mm_extract_epi32(bytes, 2);
  std::memcpy(out, &r, 4);
  std::memcpy(out + width, &g, 4);
  std::memcpy(out + 2 * width, &b, 4);
}

// `rows` source rows through the horizontal pass, four output pixels at a time;
// the weights and bounds of a pixel are read once for all the rows. Pixels
// whose taps come within three pixels of a row's end go through the portable
// code.
template <int kRows>
__attribute__((target("sse4.1"))) void rows3_sse41(const RowPass& pass,
                                                   const __m128i* wide,
                                                   const std::uint8_t* const* in,
                                                   std::uint8_t* const* out) {
  const Taps& h = pass.h;
  const int pairs = (h.taps + 1) / 2;
  const auto safe = [&](int j) {
    const int x = source(pass, j);
    return in_row(pass, h.first[x], h.count[x]);
  };
  int j = 0;
  while (j < pass.width) {
    // Each of the four is checked: a filter need not end later as it goes.
    if (j + 4 <= pass.width && safe(j) && safe(j + 1) && safe(j + 2) && safe(j + 3)) {
      __m128i sums[kRows][4];
      for (int i = 0; i < 4; ++i) {
        const int x = source(pass, j + i);
        const __m128i* k = wide + std::size_t(x) * pairs * 2;
        for (int r = 0; r < kRows; ++r) {
          sums[r][i] = pixel3_sse41(in[r] + h.first[x] * 3, k, h.count[x]);
        }
      }
      for (int r = 0; r < kRows; ++r) store_planes4(sums[r], out[r] + j, pass.width);
      j += 4;
      continue;
    }
    for (int r = 0; r < kRows; ++r) output_portable<3>(pass, in[r], out[r], j);
    ++j;
  }
}

// The vertical pass' sums for the 8 bytes at `in` of `count` rows, `stride`
// apart: elements 0-3 in *lo, 4-7 in *hi.
__attribute__((target("sse4.1"))) inline void column8_sse41(const std::uint8_t* in,
                                                            std::size_t stride,
                                                            const std::int32_t* k,
                                                            int count, __m128i* lo,
                                                            __m128i* hi) {
  *lo = _mm_set1_epi32(kHalf);
  *hi = *lo;
  for (int t = 0; t < count; ++t) {
    const __m128i px = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + t * stride));
    const __m128i w = _mm_set1_epi32(k[t]);
    *lo = _mm_add_epi32(*lo, _mm_mullo_epi32(_mm_cvtepu8_epi32(px), w));
    *hi =
        _mm_add_epi32(*hi, _mm_mullo_epi32(_mm_cvtepu8_epi32(_mm_srli_si128(px, 4)), w));
  }
}

__attribute__((target("sse4.1"))) void column_sse41(const std::uint8_t* in,
                                                    std::size_t stride,
                                                    const std::int32_t* k, int count,
                                                    int elems, std::uint8_t* out) {
  for (int i = 0; i < elems; i += 8) {
    __m128i lo, hi;
    column8_sse41(in + i, stride, k, count, &lo, &hi);
    store4(lo, out + i);
    store4(hi, out + i + 4);
  }
}

__attribute__((target("sse4.1"))) inline __m128 affine4(__m128i sums, __m128 sc,
                                                        __m128 sh) {
  return _mm_add_ps(_mm_mul_ps(_mm_cvtepi32_ps(clamp4(sums)), sc), sh);
}

__attribute__((target("sse4.1"))) void column_f32_sse41(
    const std::uint8_t* in, std::size_t stride, const std::int32_t* k, int count,
    int width, int channels, const float* scale, const float* shift, float* out,
    std::size_t plane) {
  for (int c = 0; c < channels; ++c) {
    const std::uint8_t* row = in + std::size_t(c) * width;
    float* o = out + c * plane;
    const __m128 sc = _mm_set1_ps(scale[c]);
    const __m128 sh = _mm_set1_ps(shift[c]);
    for (int x = 0; x < width; x += 8) {
      __m128i lo, hi;
      column8_sse41(row + x, stride, k, count, &lo, &hi);
      _mm_storeu_ps(o + x, affine4(lo, sc, sh));
      _mm_storeu_ps(o + x + 4, affine4(hi, sc, sh));
    }
  }
}

// pshufb masks for interleave3: mask[b][c] moves plane c's bytes to their
// places in the b-th 16 bytes of 16 interleaved pixels (-1 elsewhere).
struct InterleaveMasks {
  alignas(16) std::int8_t mask[3][3][16];
};
constexpr InterleaveMasks interleave_masks() {
  InterleaveMasks m{};
  for (int b = 0; b < 3; ++b) {
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 16; ++k) {
        const int i = 16 * b + k;
        m.mask[b][c][k] = static_cast<std::int8_t>(i % 3 == c ? i / 3 : -1);
      }
    }
  }
  return m;
}
constexpr InterleaveMasks kInterleave = interleave_masks();

// Interleaves whole groups of 16 pixels; returns how many pixels it did.
__attribute__((target("sse4.1"))) int interleave3_sse41(const std::uint8_t* planes,
                                                        int width, std::uint8_t* out) {
  int x = 0;
  for (; x + 16 <= width; x += 16) {
    __m128i plane[3];
    for (int c = 0; c < 3; ++c) {
      plane[c] =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(planes + c * width + x));
    }
    for (int b = 0; b < 3; ++b) {
      __m128i bytes = _mm_setzero_si128();
      for (int c = 0; c < 3; ++c) {
        const __m128i m =
            _mm_load_si128(reinterpret_cast<const __m128i*>(kInterleave.mask[b][c]));
        bytes = _mm_or_si128(bytes, _mm_shuffle_epi8(plane[c], m));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * x + 16 * b), bytes);
    }
  }
  return x;
}

// ---- AVX2 -----------------------------------------------------------------
// The horizontal pass takes two output pixels per vector, one per 128-bit lane,
// so pshufb's per-lane shuffle and pmaddwd keep the SSE4.1 kernel's layout
// within each lane. Its weights are laid out per pair of output pixels (j, j+1)
// in output order: per pair of taps, {hi, lo} as 256-bit vectors whose low lane
// is pixel j's and high lane pixel j+1's, each zero past its own taps, so the
// pair runs to the larger count of the two.

// The fixed-point sums of output pixels a (low lane) and b (high lane).
__attribute__((target("avx2"))) inline __m256i pixel3x2_avx2(const std::uint8_t* a,
                                                             const std::uint8_t* b,
                                                             const __m256i* k, int n) {
  const __m256i spread = _mm256_setr_epi8(SEEDLOADER_SPREAD, SEEDLOADER_SPREAD);
  __m256i high = _mm256_setzero_si256();
  __m256i low = _mm256_setzero_si256();
  for (int t = 0; t < n; t += 2, a += 6, b += 6, k += 2) {
    const __m256i px = _mm256_shuffle_epi8(
        _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a))),
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)), 1),
        spread);
    high = _mm256_add_epi32(high, _mm256_madd_epi16(px, _mm256_loadu_si256(k)));
    low = _mm256_add_epi32(low, _mm256_madd_epi16(px, _mm256_loadu_si256(k + 1)));
  }
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(high, 11), low),
                          _mm256_set1_epi32(kHalf));
}

// Output pixels j, j + 1's source offsets and shared tap count, or false when a
// vector load would leave the row.
inline bool pair_taps(const RowPass& pass, int j, int* a, int* b, int* n) {
  const int xa = source(pass, j);
  const int xb = source(pass, j + 1);
  *n = std::max(pass.h.count[xa], pass.h.count[xb]);
  *a = pass.h.first[xa];
  *b = pass.h.first[xb];
  return in_row(pass, *a, *n) && in_row(pass, *b, *n);
}

template <int kRows>
__attribute__((target("avx2"))) void rows3_avx2(const RowPass& pass, const __m256i* wide,
                                                const std::uint8_t* const* in,
                                                std::uint8_t* const* out) {
  const int pairs = (pass.h.taps + 1) / 2;
  // j stays even, so the pair (j, j + 1) is the (j / 2)th of the layout.
  int j = 0;
  while (j < pass.width) {
    int a[2], b[2], n[2];
    if (j + 4 <= pass.width && pair_taps(pass, j, &a[0], &b[0], &n[0]) &&
        pair_taps(pass, j + 2, &a[1], &b[1], &n[1])) {
      __m256i sums[kRows][2];
      for (int i = 0; i < 2; ++i) {
        const __m256i* k = wide + (std::size_t(j / 2) + i) * pairs * 2;
        for (int r = 0; r < kRows; ++r) {
          sums[r][i] = pixel3x2_avx2(in[r] + a[i] * 3, in[r] + b[i] * 3, k, n[i]);
        }
      }
      for (int r = 0; r < kRows; ++r) {
        const __m128i four[4] = {
            _mm256_castsi256_si128(sums[r][0]), _mm256_extracti128_si256(sums[r][0], 1),
            _mm256_castsi256_si128(sums[r][1]), _mm256_extracti128_si256(sums[r][1], 1)};
        store_planes4(four, out[r] + j, pass.width);
      }
      j += 4;
      continue;
    }
    for (int e = j; e < std::min(j + 2, pass.width); ++e) {
      for (int r = 0; r < kRows; ++r) output_portable<3>(pass, in[r], out[r], e);
    }
    j += 2;
  }
}

// The vertical pass' sums for the 8 bytes at `in` of `count` rows.
__attribute__((target("avx2"))) inline __m256i column8_avx2(const std::uint8_t* in,
                                                            std::size_t stride,
                                                            const std::int32_t* k,
                                                            int count) {
  __m256i s = _mm256_set1_epi32(kHalf);
  for (int t = 0; t < count; ++t) {
    const __m256i px = _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + t * stride)));
    s = _mm256_add_epi32(s, _mm256_mullo_epi32(px, _mm256_set1_epi32(k[t])));
  }
  return s;
}

__attribute__((target("avx2"))) inline __m256i clamp8(__m256i sums) {
  const __m256i top = _mm256_set1_epi32((std::int32_t{1} << (kPrecisionBits + 8)) - 1);
  return _mm256_srli_epi32(
      _mm256_min_epi32(_mm256_max_epi32(sums, _mm256_setzero_si256()), top),
      kPrecisionBits);
}

__attribute__((target("avx2"))) void column_avx2(const std::uint8_t* in,
                                                 std::size_t stride,
                                                 const std::int32_t* k, int count,
                                                 int elems, std::uint8_t* out) {
  for (int i = 0; i < elems; i += 16) {
    const __m256i lo = clamp8(column8_avx2(in + i, stride, k, count));
    const __m256i hi = clamp8(column8_avx2(in + i + 8, stride, k, count));
    // packus works within lanes: (lo0-3 hi0-3 | lo4-7 hi4-7); put lo before hi.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words),
                                           _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), bytes);
  }
}

__attribute__((target("avx2"))) void column_f32_avx2(
    const std::uint8_t* in, std::size_t stride, const std::int32_t* k, int count,
    int width, int channels, const float* scale, const float* shift, float* out,
    std::size_t plane) {
  for (int c = 0; c < channels; ++c) {
    const std::uint8_t* row = in + std::size_t(c) * width;
    float* o = out + c * plane;
    const __m256 sc = _mm256_set1_ps(scale[c]);
    const __m256 sh = _mm256_set1_ps(shift[c]);
    for (int x = 0; x < width; x += 8) {
      const __m256 v =
          _mm256_cvtepi32_ps(clamp8(column8_avx2(row + x, stride, k, count)));
      // Multiply, then add: no fused multiply-add (this target has no FMA).
      _mm256_storeu_ps(o + x, _mm256_add_ps(_mm256_mul_ps(v, sc), sh));
    }
  }
}

SimdLevel detect() {
  SimdLevel best = SimdLevel::kOff;
  if (__builtin_cpu_supports("sse4.1")) best = SimdLevel::kSse41;
  if (__builtin_cpu_supports("avx2")) best = SimdLevel::kAvx2;
  const char* env = std::getenv("SEEDLOADER_SIMD");
  if (env == nullptr || *env == '\0') return best;
  const std::string_view asked(env);
  SimdLevel level;
  if (asked == "off") {
    level = SimdLevel::kOff;
  } else if (asked == "sse41") {
    level = SimdLevel::kSse41;
  } else if (asked == "avx2") {
    level = SimdLevel::kAvx2;
  } else {
    throw ConfigError("SEEDLOADER_SIMD=" + std::string(asked) +
                      ": expected off, sse41 or avx2");
  }
  return std::min(level, best);
}

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel level = detect();
  return level;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kOff:
      return "off";
    case SimdLevel::kSse41:
      return "sse41";
    case SimdLevel::kAvx2:
      return "avx2";
  }
  return "?";
}

void prepare_rows3(SimdLevel level, const RowPass& pass,
                   std::vector<std::int16_t>& wide) {
  const Taps& h = pass.h;
  const int pairs = (h.taps + 1) / 2;
  if (level == SimdLevel::kSse41) {
    // Per source pixel x, per pair of taps: {hi, lo}.
    wide.assign(std::size_t(pass.width) * pairs * 16, 0);
    for (int x = 0; x < pass.width; ++x) {
      const std::int32_t* k = h.weights + std::size_t(x) * h.taps;
      for (int t = 0; t < h.taps; ++t) {
        std::int16_t* hi = &wide[(std::size_t(x) * pairs + t / 2) * 16];
        split_pair(k, t, hi, hi + 8);
      }
    }
  } else if (level == SimdLevel::kAvx2) {
    // Per pair of output pixels, per pair of taps: {hi, lo}, a lane per pixel.
    const int groups = (pass.width + 1) / 2;
    wide.assign(std::size_t(groups) * pairs * 32, 0);
    for (int j = 0; j < pass.width; ++j) {
      const std::int32_t* k = h.weights + std::size_t(source(pass, j)) * h.taps;
      for (int t = 0; t < h.taps; ++t) {
        std::int16_t* hi = &wide[(std::size_t(j / 2) * pairs + t / 2) * 32 + (j % 2) * 8];
        split_pair(k, t, hi, hi + 16);
      }
    }
  }
}

void rows3(SimdLevel level, const RowPass& pass, const std::vector<std::int16_t>& wide,
           const std::uint8_t* const* in, std::uint8_t* const* out, int rows) {
  const void* w = wide.data();
  switch (level) {
    case SimdLevel::kAvx2:
      if (rows == 4) return rows3_avx2<4>(pass, static_cast<const __m256i*>(w), in, out);
      for (int r = 0; r < rows; ++r) {
        rows3_avx2<1>(pass, static_cast<const __m256i*>(w), in + r, out + r);
      }
      return;
    case SimdLevel::kSse41:
      if (rows == 4) return rows3_sse41<4>(pass, static_cast<const __m128i*>(w), in, out);
      for (int r = 0; r < rows; ++r) {
        rows3_sse41<1>(pass, static_cast<const __m128i*>(w), in + r, out + r);
      }
      return;
    case SimdLevel::kOff:
      for (int r = 0; r < rows; ++r) {
        for (int j = 0; j < pass.width; ++j) output_portable<3>(pass, in[r], out[r], j);
      }
      return;
  }
}

void row1(const RowPass& pass, const std::uint8_t* in, std::uint8_t* out) {
  for (int j = 0; j < pass.width; ++j) output_portable<1>(pass, in, out, j);
}

void column(SimdLevel level, const std::uint8_t* in, std::size_t stride,
            const std::int32_t* k, int count, int elems, std::uint8_t* out) {
  switch (level) {
    case SimdLevel::kAvx2:
      return column_avx2(in, stride, k, count, elems, out);
    case SimdLevel::kSse41:
      return column_sse41(in, stride, k, count, elems, out);
    case SimdLevel::kOff:
      return column_portable(in, stride, k, count, elems, out);
  }
}

void column_f32(SimdLevel level, const std::uint8_t* in, std::size_t stride,
                const std::int32_t* k, int count, int width, int channels,
                const float* scale, const float* shift, float* out, std::size_t plane) {
  if (level == SimdLevel::kAvx2) {
    column_f32_avx2(in, stride, k, count, width, channels, scale, shift, out, plane);
  } else {
    column_f32_sse41(in, stride, k, count, width, channels, scale, shift, out, plane);
  }
}

void interleave3(SimdLevel level, const std::uint8_t* planes, int width,
                 std::uint8_t* out) {
  // The vector code takes whole groups of 16 pixels; the rest are done here.
  int x = level != SimdLevel::kOff ? interleave3_sse41(planes, width, out) : 0;
  for (; x < width; ++x) {
    for (int c = 0; c < 3; ++c) out[3 * x + c] = planes[c * width + x];
  }
}

#undef SEEDLOADER_SPREAD

}  // namespace seedloader::resample
