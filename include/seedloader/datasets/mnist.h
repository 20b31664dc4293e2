// Mnist: the IDX files of MNIST — train-images-idx3-ubyte and
// train-labels-idx1-ubyte (train) or t10k-* (test). Big-endian headers: magic
// 0x00000803 (u8, 3 dims: count, rows, cols) for images and 0x00000801 (u8, 1 dim)
// for labels. Files are mapped read-only and shared by forked workers.
// Fields: "image" [1, H, W] from the transform chain (empty chain: 1x28x28
// float32 in [0, 1]), "label" int64.
// A wrong magic, a count that exceeds the file, or image and label counts that
// differ is a DataError naming the file.
// Owns its mappings and transform chain (in a State defined in mnist.cc).
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "seedloader/dataset.h"
#include "seedloader/datasets/split.h"
#include "seedloader/transforms/compose.h"

namespace seedloader {

class Mnist final : public Dataset {
 public:
  Mnist(std::string dir, Split split, Compose transform = Compose());
  ~Mnist() override;
  Mnist(const Mnist&) = delete;
  Mnist& operator=(const Mnist&) = delete;

  std::uint64_t size() const override;
  const SampleLayout& layout() const override;
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  struct State;
  std::unique_ptr<const State> state_;
};

}  // namespace seedloader
