// Mnist: the IDX files of MNIST — train-images-idx3-ubyte and
// train-labels-idx1-ubyte (train) or t10k-* (test). Big-endian headers: magic
// 0x00000803 (u8, 3 dims: count, rows, cols) for images and 0x00000801 (u8, 1 dim)
// for labels. Files are mapped read-only and shared by forked workers.
// Fields: "image" [1, H, W] from the transform chain (empty chain: 1x28x28
// float32 in [0, 1]), "label" int64.
// A wrong magic, a count that exceeds the file, or image and label counts that
// differ is a DataError naming the file.
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <string>

#include "loader/dataset.h"
#include "loader/datasets/file_io.h"
#include "loader/datasets/image_output.h"

namespace seedloader {

class Mnist final : public Dataset {
 public:
  Mnist(std::string dir, bool train, Compose transform = Compose());
  Mnist(const Mnist&) = delete;
  Mnist& operator=(const Mnist&) = delete;

  std::uint64_t size() const override { return count_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  static cv::Size image_size(const MappedFile& images);

  std::string dir_;
  bool train_;
  MappedFile images_;
  MappedFile labels_;
  std::uint64_t count_ = 0;
  int rows_ = 0, cols_ = 0;
  ImageOutput output_;
  SampleLayout layout_;
};

}  // namespace seedloader
