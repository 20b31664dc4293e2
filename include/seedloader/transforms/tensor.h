// The last step of a transform chain: HWC u8 image -> CHW tensor in a batch slot
// row, in one pass. ToTensor writes float32 in [0, 1] (pixel / 255), or, given a
// Normalize, ((pixel / 255) - mean[c]) / std[c] fused into the same pass (one
// multiply-add per element); or it copies u8 as is (CHW) for models that
// normalise on the device. Immutable; safe to share across threads and processes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

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
  enum class Output { kFloat32, kUint8 };
  // float32 in [0, 1].
  ToTensor() = default;
  // float32, normalised.
  explicit ToTensor(Normalize normalize) : normalize_(std::move(normalize)) {}
  // u8, CHW, unscaled.
  static ToTensor uint8();

  Output output() const { return output_; }
  const std::optional<Normalize>& normalize() const { return normalize_; }

  // REQUIRES: image is CV_8UC(C), out.size() == C * rows * cols, and a Normalize
  // given has 1 or C entries. Throws DataError otherwise.
  void write(const cv::Mat& image, std::span<float> out) const;
  // REQUIRES: output() == kUint8 and the sizes as above.
  void write(const cv::Mat& image, std::span<std::uint8_t> out) const;
  std::string describe() const;

 private:
  Output output_ = Output::kFloat32;
  std::optional<Normalize> normalize_;
};

}  // namespace seedloader
