// Cifar10: the CIFAR-10 binary format — data_batch_1.bin .. data_batch_5.bin
// (train) or test_batch.bin (test), each a run of 3073-byte records: one label
// byte, then 3072 pixel bytes (1024 R, 1024 G, 1024 B, rows top to bottom).
// The files are mapped read-only (page cache pages, shared by forked workers).
// Fields: "image" [3, H, W] from the transform chain (empty chain: 3x32x32
// float32 in [0, 1]), "label" int64.
// A missing file or a size not a multiple of 3073 is a DataError naming the file;
// a label byte above 9 is a DataError naming the file and sample.
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <string>
#include <vector>

#include "loader/dataset.h"
#include "loader/datasets/file_io.h"
#include "loader/datasets/image_output.h"

namespace seedloader {

class Cifar10 final : public Dataset {
 public:
  static constexpr std::uint64_t kRecordBytes = 3073;

  Cifar10(std::string dir, bool train, Compose transform = Compose());
  Cifar10(const Cifar10&) = delete;
  Cifar10& operator=(const Cifar10&) = delete;

  std::uint64_t size() const override { return starts_.back(); }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  std::string dir_;
  bool train_;
  ImageOutput output_;
  SampleLayout layout_;
  std::vector<MappedFile> files_;
  std::vector<std::uint64_t> starts_;  // first sample of each file, then the total
};

}  // namespace seedloader
