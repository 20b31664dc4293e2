// ImageOutput: the part every image dataset shares — a Compose chain, the
// image field it produces ([C, H, W], float32 or u8 as the chain's ToTensor says),
// and the step that runs the chain and writes the result into a sample's row.
// Owns its Compose; immutable after construction, safe to share across threads
// and fork.
#pragma once

#include <string>

#include "seedloader/dataset.h"
#include "seedloader/transforms/compose.h"

namespace seedloader {

class ImageOutput {
 public:
  // `input` is the size of every source image when the dataset knows it (CIFAR,
  // MNIST, Synthetic), else {0, 0}. Throws ConfigError naming `who` when the chain
  // does not fix the output size, or channels is not 1 or 3.
  ImageOutput(Compose transform, int channels, cv::Size input, const std::string& who);

  // The image field, named `name`.
  FieldSpec field(std::string name) const;
  int channels() const { return channels_; }
  cv::Size size() const { return size_; }
  const Compose& transform() const { return transform_; }

  // Runs the chain on a decoded image / an encoded source and writes field `f`.
  // Throws DataError when the result does not have the declared shape.
  void write(cv::Mat image, Rng& rng, TransformLog* log, SampleWriter& out,
             std::size_t f) const;
  void write(const ImageSource& source, Rng& rng, TransformLog* log, SampleWriter& out,
             std::size_t f) const;

 private:
  void store(const cv::Mat& image, SampleWriter& out, std::size_t f) const;
  // Calls fn with field f's row typed as the chain's ToTensor writes it.
  template <typename Fn>
  void with_image_field(SampleWriter& out, std::size_t f, Fn&& fn) const;

  Compose transform_;
  bool fused_ = false;  // transform_.fuses(), asked once
  int channels_;
  cv::Size size_;
};

// Rethrows a DataError or OpenCV exception in flight as DataError prefixed with
// `where` (e.g. "ImageFolder(/data): sample 12 (/data/cat/1.jpg)"); any other
// exception propagates unchanged. Call only inside a catch block.
[[noreturn]] void rethrow_as_data_error(const std::string& where);

}  // namespace seedloader
