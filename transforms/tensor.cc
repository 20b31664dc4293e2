#include "seedloader/transforms/tensor.h"

#include <array>
#include <cmath>
#include <sstream>

#include "seedloader/error.h"

namespace seedloader {
namespace {

const char* output_name(ToTensor::Output o) {
  switch (o) {
    case ToTensor::Output::kUint8:
      return "uint8";
    case ToTensor::Output::kFloat16:
      return "float16";
    case ToTensor::Output::kBFloat16:
      return "bfloat16";
    case ToTensor::Output::kFloat32:
      break;
  }
  return "float32";
}

void check_image(const cv::Mat& image, std::size_t out_size) {
  if (image.depth() != CV_8U) throw DataError("ToTensor: image is not 8-bit");
  const std::size_t need =
      static_cast<std::size_t>(image.channels()) * image.rows * image.cols;
  if (need != out_size) {
    throw DataError("ToTensor: a " + std::to_string(image.channels()) + "x" +
                    std::to_string(image.rows) + "x" + std::to_string(image.cols) +
                    " image does not fit a row of " + std::to_string(out_size) +
                    " elements");
  }
}

}  // namespace

Normalize::Normalize(std::vector<float> mean, std::vector<float> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  if (mean_.size() != std_.size() || (mean_.size() != 1 && mean_.size() != 3)) {
    throw ConfigError("Normalize: mean and std need 1 or 3 entries each");
  }
  for (float s : std_) {
    if (!(s > 0 && std::isfinite(s)))
      throw ConfigError("Normalize: std must be finite and > 0");
  }
  for (float m : mean_) {
    if (!std::isfinite(m)) throw ConfigError("Normalize: mean must be finite");
  }
}

Normalize Normalize::imagenet() {
  return Normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
}

std::string Normalize::describe() const {
  std::ostringstream out;
  out << "Normalize(mean=(";
  for (std::size_t i = 0; i < mean_.size(); ++i) out << (i ? ", " : "") << mean_[i];
  out << "), std=(";
  for (std::size_t i = 0; i < std_.size(); ++i) out << (i ? ", " : "") << std_[i];
  out << "))";
  return out.str();
}

ToTensor ToTensor::uint8() {
  ToTensor t;
  t.output_ = Output::kUint8;
  return t;
}

ToTensor::ToTensor(std::optional<Normalize> normalize, Output precision)
    : output_(precision), normalize_(std::move(normalize)) {
  if (precision == Output::kUint8)
    throw ConfigError(
        "ToTensor: a normalised or scaled output is floating (use uint8())");
}

DType ToTensor::dtype() const {
  switch (output_) {
    case Output::kUint8:
      return DType::kU8;
    case Output::kFloat16:
      return DType::kF16;
    case Output::kBFloat16:
      return DType::kBF16;
    case Output::kFloat32:
      break;
  }
  return DType::kF32;
}

void ToTensor::write(const cv::Mat& image, std::span<float> out) const {
  write_planes(image, out);
}

void ToTensor::write(const cv::Mat& image, std::span<Float16> out) const {
  write_planes(image, out);
}

void ToTensor::write(const cv::Mat& image, std::span<BFloat16> out) const {
  write_planes(image, out);
}

namespace {

template <typename T>
struct TableOf;
template <>
struct TableOf<float> {
  static float convert(float v) { return v; }
};
template <>
struct TableOf<Float16> {
  static Float16 convert(float v) { return to_float16(v); }
};
template <>
struct TableOf<BFloat16> {
  static BFloat16 convert(float v) { return to_bfloat16(v); }
};

}  // namespace

void ToTensor::require_dtype(DType want) const {
  if (dtype() == want) return;
  const char* asked = want == DType::kU8     ? "uint8"
                      : want == DType::kF16  ? "float16"
                      : want == DType::kBF16 ? "bfloat16"
                      : want == DType::kF32  ? "float32"
                                             : "another type";
  throw DataError(std::string("ToTensor: configured for ") + output_name(output_) +
                  ", asked to write " + asked);
}

template <typename T>
void ToTensor::fill_table(std::array<std::array<T, 256>, 4>& table, int channels) const {
  if (channels < 1 || channels > 4) throw DataError("ToTensor: more than 4 channels");
  require_dtype(dtype_of<T>());
  for (int c = 0; c < channels; ++c) {
    const auto [scale, shift] = affine(c, channels);
    for (int v = 0; v < 256; ++v)
      table[c][v] = TableOf<T>::convert(static_cast<float>(v) * scale + shift);
  }
}

// y = pixel * scale[c] + shift[c]: scaling and normalisation in one multiply-add
// (two roundings: this file is compiled without contraction into an FMA, so the
// resampler's vector code, which multiplies then adds, gives the same floats).
std::pair<float, float> ToTensor::affine(int c, int channels) const {
  float mean = 0.0f;
  float sd = 1.0f;
  if (normalize_) {
    const auto& m = normalize_->mean();
    if (m.size() != 1 && static_cast<int>(m.size()) != channels) {
      throw DataError("ToTensor: Normalize has " + std::to_string(m.size()) +
                      " entries for a " + std::to_string(channels) + "-channel image");
    }
    mean = m.size() == 1 ? m[0] : m[c];
    sd = normalize_->std().size() == 1 ? normalize_->std()[0] : normalize_->std()[c];
  }
  return {1.0f / (255.0f * sd), -mean / sd};
}

template void ToTensor::fill_table(std::array<std::array<float, 256>, 4>&, int) const;
template void ToTensor::fill_table(std::array<std::array<Float16, 256>, 4>&, int) const;
template void ToTensor::fill_table(std::array<std::array<BFloat16, 256>, 4>&, int) const;

template <typename T>
void ToTensor::write_planes(const cv::Mat& image, std::span<T> out) const {
  const int channels = image.channels();
  // A 256-entry table per channel turns the multiply-add into one load, and the
  // HWC -> CHW scatter happens in the same pass: one read of each pixel, one
  // write of each value, no temporary image.
  std::array<std::array<T, 256>, 4> lut;
  fill_table(lut, channels);
  check_image(image, out.size());
  const std::size_t plane = static_cast<std::size_t>(image.rows) * image.cols;
  for (int y = 0; y < image.rows; ++y) {
    const std::uint8_t* src = image.ptr<std::uint8_t>(y);
    T* row = out.data() + static_cast<std::size_t>(y) * image.cols;
    if (channels == 3) {
      T* r = row;
      T* g = row + plane;
      T* b = row + 2 * plane;
      for (int x = 0; x < image.cols; ++x, src += 3) {
        r[x] = lut[0][src[0]];
        g[x] = lut[1][src[1]];
        b[x] = lut[2][src[2]];
      }
      continue;
    }
    for (int x = 0; x < image.cols; ++x) {
      for (int c = 0; c < channels; ++c)
        row[c * plane + x] = lut[c][src[x * channels + c]];
    }
  }
}

void ToTensor::write(const cv::Mat& image, std::span<std::uint8_t> out) const {
  require_dtype(DType::kU8);
  check_image(image, out.size());
  const int channels = image.channels();
  const std::size_t plane = static_cast<std::size_t>(image.rows) * image.cols;
  if (channels > 4) throw DataError("ToTensor: more than 4 channels");
  // Headers over the slot's planes (no allocation): split writes each channel
  // straight into its plane, with OpenCV's vectorised deinterleave.
  std::array<cv::Mat, 4> targets;
  for (int c = 0; c < channels; ++c) {
    targets[c] = cv::Mat(image.rows, image.cols, CV_8U, out.data() + c * plane);
  }
  cv::split(image, targets.data());
}

std::string ToTensor::describe() const {
  if (output_ == Output::kUint8) return "ToTensor(u8)";
  const std::string precision = output_name(output_);
  return normalize_ ? "ToTensor(" + precision + ", " + normalize_->describe() + ")"
                    : "ToTensor(" + precision + ")";
}

}  // namespace seedloader
