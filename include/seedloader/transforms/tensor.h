// The last step of a transform chain: HWC u8 image -> CHW tensor in a batch slot
// row, in one pass. ToTensor writes float32 in [0, 1] (pixel / 255), or, given a
// Normalize, ((pixel / 255) - mean[c]) / std[c] fused into the same pass (one
// multiply-add per element), in float32, float16 or bfloat16 (each value computed
// in float32, then rounded to nearest-even: what torch's .half() / .bfloat16()
// give for this float32 output); or it copies u8 as is (CHW) for models that
// normalise on the device. Immutable; safe to share across threads and processes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

#include "seedloader/dtype.h"

namespace seedloader {

class Normalize {
 public:
  // Throws ConfigError when the lengths differ, are not 1 or 3, a std is <= 0, or
  // a value is not finite as a float (1e39 is not).
  Normalize(std::vector<float> mean, std::vector<float> std);
  // mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225).
  static Normalize imagenet();
  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& std() const { return std_; }
  std::string describe() const;

 private:
  std::vector<float> mean_;
  std::vector<float> std_;
};

class ToTensor {
 public:
  enum class Output { kFloat32, kUint8, kFloat16, kBFloat16 };
  // float32 in [0, 1].
  ToTensor() = default;
  // float32, normalised.
  explicit ToTensor(Normalize normalize) : normalize_(std::move(normalize)) {}
  // A floating output (kFloat32, kFloat16 or kBFloat16), normalised when given.
  // Throws ConfigError for kUint8 (use uint8()).
  ToTensor(std::optional<Normalize> normalize, Output precision);
  // u8, CHW, unscaled.
  static ToTensor uint8();

  Output output() const { return output_; }
  // The dtype of what write() produces: kF32, kU8, kF16 or kBF16.
  DType dtype() const;
  const std::optional<Normalize>& normalize() const { return normalize_; }

  // REQUIRES: image is CV_8UC(C), out.size() == C * rows * cols, and a Normalize
  // given has 1 or C entries; the span's type is dtype()'s. Throws DataError
  // otherwise.
  void write(const cv::Mat& image, std::span<float> out) const;
  void write(const cv::Mat& image, std::span<Float16> out) const;
  void write(const cv::Mat& image, std::span<BFloat16> out) const;
  void write(const cv::Mat& image, std::span<std::uint8_t> out) const;

  // Throws DataError unless write() produces `want` (dtype()).
  void require_dtype(DType want) const;
  // What write() stores for value v of channel c, as table[c][v], for an image of
  // `channels` channels: T is dtype()'s floating element type. Throws DataError as
  // write() does for a mismatched type or Normalize.
  template <typename T>
  void fill_table(std::array<std::array<T, 256>, 4>& table, int channels) const;
  // The floating outputs' map for channel c of a `channels`-channel image:
  // value = pixel * scale + shift, the product and the sum each rounded to
  // float32 (never fused), before any conversion to float16 or bfloat16.
  // Throws DataError when a Normalize does not fit `channels`.
  std::pair<float, float> affine(int c, int channels) const;
  std::string describe() const;

 private:
  // The float paths, through fill_table().
  template <typename T>
  void write_planes(const cv::Mat& image, std::span<T> out) const;

  Output output_ = Output::kFloat32;
  std::optional<Normalize> normalize_;
};

}  // namespace seedloader
