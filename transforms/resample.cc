#include "transforms/resample.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <smmintrin.h>

#include "seedloader/error.h"
#include "seedloader/half.h"

namespace seedloader {
namespace {

// Pillow's 8-bit precision: a 255 * weight sum stays inside int32 with room for
// negative lobes (none here: the triangle is never negative).
constexpr int kPrecisionBits = 32 - 8 - 2;
constexpr std::int32_t kHalf = std::int32_t{1} << (kPrecisionBits - 1);

inline std::uint8_t clip8(std::int32_t v) {
  if (v >= (std::int32_t{1} << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

inline double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

void check_args(const cv::Mat& src, ResampleBox box, cv::Size size) {
  if (src.depth() != CV_8U || (src.channels() != 1 && src.channels() != 3)) {
    throw DataError("resize: the image is not 8-bit with 1 or 3 channels");
  }
  if (!(box.x0 >= 0 && box.y0 >= 0 && box.x1 <= src.cols && box.y1 <= src.rows &&
        box.x0 < box.x1 && box.y0 < box.y1)) {
    throw DataError("resize: the window lies outside a " + std::to_string(src.cols) +
                    "x" + std::to_string(src.rows) + " image, or is empty");
  }
  if (size.width <= 0 || size.height <= 0) throw DataError("resize: empty output size");
}

}  // namespace

Resampler& thread_resampler() {
  thread_local Resampler resampler;
  return resampler;
}

// Pillow's precompute_coeffs and normalize_coeffs_8bpc (Resample.c), step for
// step: the same centre, the same truncating bounds, the weights normalised in
// double and rounded half away from zero to fixed point.
void Resampler::plan(int in_size, double in0, double in1, int out_size, Axis& axis) {
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;  // the triangle's support is 1
  axis.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  axis.weights.assign(static_cast<std::size_t>(out_size) * axis.taps, 0);
  axis.scratch.resize(axis.taps);
  double* w = axis.scratch.data();
  const double inv = 1.0 / filterscale;
  for (int i = 0; i < out_size; ++i) {
    const double center = in0 + (i + 0.5) * scale;
    int lo = static_cast<int>(center - support + 0.5);
    if (lo < 0) lo = 0;
    int hi = static_cast<int>(center + support + 0.5);
    if (hi > in_size) hi = in_size;
    const int n = std::min(hi - lo, axis.taps);
    double sum = 0.0;
    for (int t = 0; t < n; ++t) {
      w[t] = triangle((t + lo - center + 0.5) * inv);
      sum += w[t];
    }
    std::int32_t* k = &axis.weights[static_cast<std::size_t>(i) * axis.taps];
    for (int t = 0; t < n; ++t) {
      const double v = sum != 0.0 ? w[t] / sum : w[t];
      k[t] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits)
                                             : 0.5 + v * (1 << kPrecisionBits));
    }
    // Taps that weigh nothing add nothing: drop them from both ends (Pillow's
    // bounds keep one at the edge of the triangle's support).
    int begin = 0;
    int end = std::max(n, 0);
    while (end > begin && k[end - 1] == 0) --end;
    while (begin < end && k[begin] == 0) ++begin;
    if (begin > 0) std::copy(k + begin, k + end, k);
    std::fill(k + (end - begin), k + axis.taps, 0);
    axis.first[i] = lo + begin;
    axis.count[i] = end - begin;
  }
}

namespace {

// The SSE4.1 kernels below compute the same integer sums as the portable ones,
// four lanes at a time; SEEDLOADER_SIMD=off selects the portable ones (the
// pixel-dispatch test compares the two).
bool use_sse41() {
  static const bool yes = [] {
    const char* env = std::getenv("SEEDLOADER_SIMD");
    if (env && std::string_view(env) == "off") return false;
    return __builtin_cpu_supports("sse4.1") != 0;
  }();
  return yes;
}

struct Taps {
  const int* first;
  const int* count;
  const std::int32_t* weights;
  int taps;
};

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

// One source row through the horizontal pass, into C planes of `width` bytes:
// output j is source pixel x = mirror ? width - 1 - j : j.
template <int C>
void row_portable(const std::uint8_t* in, std::uint8_t* out, const Taps& h, int width,
                  bool mirror) {
  for (int j = 0; j < width; ++j) {
    const int x = mirror ? width - 1 - j : j;
    pixel_portable<C>(in + h.first[x] * C, h.weights + std::size_t(x) * h.taps,
                      h.count[x], out + j, width);
  }
}

// Clips four fixed-point sums to bytes, in the low four bytes of the result.
__attribute__((target("sse4.1"))) inline __m128i clip4(__m128i sums) {
  const __m128i top = _mm_set1_epi32((std::int32_t{1} << (kPrecisionBits + 8)) - 1);
  sums = _mm_min_epi32(_mm_max_epi32(sums, _mm_setzero_si128()), top);
  sums = _mm_srli_epi32(sums, kPrecisionBits);
  return _mm_packus_epi16(_mm_packus_epi32(sums, sums), sums);
}

__attribute__((target("sse4.1"))) inline void store4(__m128i sums, std::uint8_t* out) {
  const std::int32_t word = _mm_cvtsi128_si32(clip4(sums));
  std::memcpy(out, &word, 4);
}

// Three channels, two taps at a time with pmaddwd, exactly: each 22-bit weight
// is split into its high and low 11 bits (both fit int16), the two partial
// sums are taken in int32 and recombined as high * 2^11 + low, which is the
// same integer as the 32-bit products' sum. A pixel is one vector of lanes
// (R, G, B, 0). Its taps' weights come prepared in `wide`: per pair of taps,
// {hi, lo}, each as int16 (w0, w1) repeated for the three channels. Loads read
// 8 bytes from the pair's first pixel, so a pixel whose taps come within three
// pixels of the row's end is done by the portable code.
// One output pixel's fixed-point sums (R, G, B, 0) before rounding.
__attribute__((target("sse4.1"))) inline __m128i pixel3_sse41(const std::uint8_t* p,
                                                              const __m128i* k, int n) {
  // Bytes (R0 G0 B0 R1 G1 B1 ..) to int16 lanes (R0 R1 G0 G1 B0 B1 0 0).
  const __m128i spread =
      _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
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
  const __m128i top = _mm_set1_epi32((std::int32_t{1} << (kPrecisionBits + 8)) - 1);
  const __m128i planar =
      _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, -1, -1, -1, -1);
  __m128i c[4];
  for (int i = 0; i < 4; ++i) {
    c[i] = _mm_srli_epi32(_mm_min_epi32(_mm_max_epi32(sums[i], _mm_setzero_si128()), top),
                          kPrecisionBits);
  }
  const __m128i bytes = _mm_shuffle_epi8(
      _mm_packus_epi16(_mm_packus_epi32(c[0], c[1]), _mm_packus_epi32(c[2], c[3])),
      planar);
  const std::int32_t r = _mm_cvtsi128_si32(bytes);
  const std::int32_t g = _mm_extract_epi32(bytes, 1);
  const std::int32_t b = _mm_extract_epi32(bytes, 2);
  std::memcpy(out, &r, 4);
  std::memcpy(out + width, &g, 4);
  std::memcpy(out + 2 * width, &b, 4);
}

// `rows` source rows (in[r], each `cols` pixels) through the horizontal pass
// into out[r], four output pixels at a time; the weights and bounds of a pixel
// are read once for all the rows. Pixels whose taps come within three pixels of
// a row's end (pixel3_sse41 loads 8 bytes) go through the portable code.
template <int kRows>
__attribute__((target("sse4.1"))) void rows3_sse41(const std::uint8_t* const* in,
                                                   std::uint8_t* const* out,
                                                   const Taps& h, const __m128i* wide,
                                                   int width, int cols, bool mirror) {
  const int pairs = (h.taps + 1) / 2;
  const auto safe = [&](int x) { return h.first[x] + h.count[x] + 2 < cols; };
  const auto source = [&](int j) { return mirror ? width - 1 - j : j; };
  int j = 0;
  while (j < width) {
    if (j + 4 <= width && safe(source(j)) && safe(source(j + 3))) {
      __m128i sums[kRows][4];
      for (int i = 0; i < 4; ++i) {
        const int x = source(j + i);
        const __m128i* k = wide + std::size_t(x) * pairs * 2;
        for (int r = 0; r < kRows; ++r) {
          sums[r][i] = pixel3_sse41(in[r] + h.first[x] * 3, k, h.count[x]);
        }
      }
      for (int r = 0; r < kRows; ++r) store_planes4(sums[r], out[r] + j, width);
      j += 4;
      continue;
    }
    const int x = source(j);
    for (int r = 0; r < kRows; ++r) {
      pixel_portable<3>(in[r] + h.first[x] * 3, h.weights + std::size_t(x) * h.taps,
                        h.count[x], out[r] + j, width);
    }
    ++j;
  }
}

// row3_sse41's weights: per output pixel, per pair of taps, {high, low} halves.
void split_weights(const std::vector<std::int32_t>& weights, int taps,
                   std::vector<std::int16_t>& wide) {
  const int pairs = (taps + 1) / 2;
  const std::size_t pixels = weights.size() / taps;
  wide.assign(pixels * pairs * 2 * 8, 0);
  for (std::size_t x = 0; x < pixels; ++x) {
    for (int t = 0; t < taps; ++t) {
      const std::int32_t w = weights[x * taps + t];
      std::int16_t* hi = &wide[((x * pairs + t / 2) * 2) * 8];
      std::int16_t* lo = hi + 8;
      for (int c = 0; c < 3; ++c) {
        hi[c * 2 + t % 2] = static_cast<std::int16_t>(w >> 11);
        lo[c * 2 + t % 2] = static_cast<std::int16_t>(w & 0x7ff);
      }
    }
  }
}

// One output row of the vertical pass: `count` input rows of `elems` bytes,
// `stride` apart, weighted by k, clipped into out. (column_sse41 does the same
// 8 bytes at a time, so it reads and writes up to 7 bytes past the rows' ends:
// the buffers leave kSlack bytes of room.)
void column_portable(const std::uint8_t* in, std::size_t stride, const std::int32_t* k,
                     int count, int elems, std::uint8_t* out) {
  for (int i = 0; i < elems; ++i) {
    std::int32_t s = kHalf;
    for (int t = 0; t < count; ++t) s += in[t * stride + i] * k[t];
    out[i] = clip8(s);
  }
}

// The vertical pass' fixed-point sums for the 8 bytes at `in` of `count` rows,
// `stride` apart: elements 0-3 in *lo, 4-7 in *hi.
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

// Four sums clipped to bytes, then mapped to v * sc + sh.
__attribute__((target("sse4.1"))) inline __m128 affine4(__m128i sums, __m128 sc,
                                                        __m128 sh) {
  const __m128i top = _mm_set1_epi32((std::int32_t{1} << (kPrecisionBits + 8)) - 1);
  sums = _mm_min_epi32(_mm_max_epi32(sums, _mm_setzero_si128()), top);
  const __m128 v = _mm_cvtepi32_ps(_mm_srli_epi32(sums, kPrecisionBits));
  return _mm_add_ps(_mm_mul_ps(v, sc), sh);
}

// column_sse41 for a float32 output: each clipped byte v of channel c becomes
// v * scale[c] + shift[c] (multiply, then add: ToTensor::affine()'s two
// roundings) and is stored straight into that channel's plane. `in` holds the
// C planes of `width` bytes; REQUIRES: width is a multiple of 8.
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

constexpr std::size_t kSlack = 16;  // room for the kernels' overreach

}  // namespace

void Resampler::horizontal(const cv::Mat& src, ResampleBox box, cv::Size size,
                           bool mirror) {
  check_args(src, box, size);
  plan(src.cols, box.x0, box.x1, size.width, h_);
  plan(src.rows, box.y0, box.y1, size.height, v_);
  const int first_row = v_.first[0];
  const int last_row = v_.first[size.height - 1] + v_.count[size.height - 1];
  for (int& f : v_.first) f -= first_row;
  const int channels = src.channels();
  const std::size_t row_elems = std::size_t(size.width) * channels;
  rows_.resize(std::size_t(last_row - first_row) * row_elems + kSlack);
  line_.resize(row_elems + kSlack);
  const Taps h{h_.first.data(), h_.count.data(), h_.weights.data(), h_.taps};
  const bool simd = channels == 3 && use_sse41();
  if (simd) split_weights(h_.weights, h_.taps, wide_);
  const auto* wide = reinterpret_cast<const __m128i*>(wide_.data());
  int y = first_row;
  if (simd) {
    for (; y + 4 <= last_row; y += 4) {
      const std::uint8_t* in[4];
      std::uint8_t* out[4];
      for (int r = 0; r < 4; ++r) {
        in[r] = src.ptr<std::uint8_t>(y + r);
        out[r] = rows_.data() + std::size_t(y + r - first_row) * row_elems;
      }
      rows3_sse41<4>(in, out, h, wide, size.width, src.cols, mirror);
    }
  }
  for (; y < last_row; ++y) {
    const std::uint8_t* in = src.ptr<std::uint8_t>(y);
    std::uint8_t* out = rows_.data() + std::size_t(y - first_row) * row_elems;
    if (channels == 1) {
      row_portable<1>(in, out, h, size.width, mirror);
    } else if (simd) {
      rows3_sse41<1>(&in, &out, h, wide, size.width, src.cols, mirror);
    } else {
      row_portable<3>(in, out, h, size.width, mirror);
    }
  }
}

const std::uint8_t* Resampler::vertical_row(int y, int row_elems) {
  const std::int32_t* k = &v_.weights[static_cast<std::size_t>(y) * v_.taps];
  const std::uint8_t* in =
      rows_.data() + static_cast<std::size_t>(v_.first[y]) * row_elems;
  if (use_sse41()) {
    column_sse41(in, row_elems, k, v_.count[y], row_elems, line_.data());
  } else {
    column_portable(in, row_elems, k, v_.count[y], row_elems, line_.data());
  }
  return line_.data();
}

void Resampler::resize(const cv::Mat& src, ResampleBox box, cv::Size size, cv::Mat& dst) {
  horizontal(src, box, size, false);
  const int channels = src.channels();
  const int row_elems = size.width * channels;
  dst.create(size, CV_MAKETYPE(CV_8U, channels));
  for (int y = 0; y < size.height; ++y) {
    const std::uint8_t* planes = vertical_row(y, row_elems);
    std::uint8_t* out = dst.ptr<std::uint8_t>(y);
    for (int c = 0; c < channels; ++c) {
      const std::uint8_t* in = planes + c * size.width;
      for (int x = 0; x < size.width; ++x) out[x * channels + c] = in[x];
    }
  }
}

template <typename T>
void Resampler::resize_planes(const cv::Mat& src, ResampleBox box, cv::Size size,
                              bool mirror, const ToTensor& output, std::span<T> out) {
  const int channels = src.channels();
  const std::size_t plane = static_cast<std::size_t>(size.width) * size.height;
  if (out.size() != plane * channels) {
    throw DataError("resize: a " + std::to_string(channels) + "x" +
                    std::to_string(size.height) + "x" + std::to_string(size.width) +
                    " output does not fit a row of " + std::to_string(out.size()) +
                    " elements");
  }
  output.require_dtype(dtype_of<T>());
  // float32 rows go straight from the sums to the planes, uint8 rows are copied;
  // the table is built only for the rows that look values up in it.
  bool direct = false;
  float scale[4];
  float shift[4];
  if constexpr (std::is_same_v<T, float>) {
    direct = use_sse41() && size.width % 8 == 0;
    for (int c = 0; direct && c < channels; ++c) {
      std::tie(scale[c], shift[c]) = output.affine(c, channels);
    }
  }
  std::array<std::array<T, 256>, 4> table;
  if constexpr (!std::is_same_v<T, std::uint8_t>) {
    if (!direct) output.fill_table(table, channels);
  }
  horizontal(src, box, size, mirror);
  const int row_elems = size.width * channels;
  for (int y = 0; y < size.height; ++y) {
    if constexpr (std::is_same_v<T, float>) {
      if (direct) {
        column_f32_sse41(rows_.data() + std::size_t(v_.first[y]) * row_elems, row_elems,
                         &v_.weights[std::size_t(y) * v_.taps], v_.count[y], size.width,
                         channels, scale, shift, out.data() + std::size_t(y) * size.width,
                         plane);
        continue;
      }
    }
    const std::uint8_t* planes = vertical_row(y, row_elems);
    for (int c = 0; c < channels; ++c) {
      const std::uint8_t* in = planes + c * size.width;
      T* row = out.data() + c * plane + static_cast<std::size_t>(y) * size.width;
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        std::memcpy(row, in, size.width);  // u8's table is the identity
      } else {
        const std::array<T, 256>& to = table[c];
        for (int x = 0; x < size.width; ++x) row[x] = to[in[x]];
      }
    }
  }
}

template void Resampler::resize_planes(const cv::Mat&, ResampleBox, cv::Size, bool,
                                       const ToTensor&, std::span<float>);
template void Resampler::resize_planes(const cv::Mat&, ResampleBox, cv::Size, bool,
                                       const ToTensor&, std::span<Float16>);
template void Resampler::resize_planes(const cv::Mat&, ResampleBox, cv::Size, bool,
                                       const ToTensor&, std::span<BFloat16>);
template void Resampler::resize_planes(const cv::Mat&, ResampleBox, cv::Size, bool,
                                       const ToTensor&, std::span<std::uint8_t>);

}  // namespace seedloader
