#include "transforms/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "seedloader/error.h"
#include "seedloader/half.h"
#include "transforms/resample_kernels.h"

namespace seedloader {
namespace {

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
      k[t] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << resample::kPrecisionBits)
                                             : 0.5 + v * (1 << resample::kPrecisionBits));
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
  rows_.resize(std::size_t(last_row - first_row) * row_elems + resample::kSlack);
  line_.resize(row_elems + resample::kSlack);
  const resample::RowPass pass{
      {h_.first.data(), h_.count.data(), h_.weights.data(), h_.taps},
      size.width,
      src.cols,
      mirror};
  const resample::SimdLevel level = resample::simd_level();
  if (channels == 3) resample::prepare_rows3(level, pass, wide_);
  int y = first_row;
  const std::uint8_t* in[4];
  std::uint8_t* out[4];
  while (y < last_row) {
    // Four rows at a time, so that each pixel's weights are read once for four.
    const int rows = channels == 3 ? std::min(4, last_row - y) : 1;
    for (int r = 0; r < rows; ++r) {
      in[r] = src.ptr<std::uint8_t>(y + r);
      out[r] = rows_.data() + std::size_t(y + r - first_row) * row_elems;
    }
    if (channels == 3) {
      resample::rows3(level, pass, wide_, in, out, rows);
    } else {
      resample::row1(pass, in[0], out[0]);
    }
    y += rows;
  }
}

const std::uint8_t* Resampler::vertical_row(int y, int row_elems) {
  const std::int32_t* k = &v_.weights[static_cast<std::size_t>(y) * v_.taps];
  const std::uint8_t* in =
      rows_.data() + static_cast<std::size_t>(v_.first[y]) * row_elems;
  resample::column(resample::simd_level(), in, row_elems, k, v_.count[y], row_elems,
                   line_.data());
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
    if (channels == 1) {
      std::memcpy(out, planes, size.width);
    } else {
      resample::interleave3(resample::simd_level(), planes, size.width, out);
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
    direct = resample::simd_level() != resample::SimdLevel::kOff && size.width % 8 == 0;
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
        resample::column_f32(
            resample::simd_level(), rows_.data() + std::size_t(v_.first[y]) * row_elems,
            row_elems, &v_.weights[std::size_t(y) * v_.taps], v_.count[y], size.width,
            channels, scale, shift, out.data() + std::size_t(y) * size.width, plane);
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
