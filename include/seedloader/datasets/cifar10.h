// Cifar10: CIFAR-10 in either of its published layouts, found under `dir`:
//  - binary (cifar-10-batches-bin): data_batch_1.bin .. data_batch_5.bin (train)
//    or test_batch.bin (test), each a run of 3073-byte records: one label byte,
//    then 3072 pixel bytes (1024 R, 1024 G, 1024 B, rows top to bottom);
//  - pickled, as torchvision downloads it (cifar-10-batches-py): data_batch_1 ..
//    data_batch_5 or test_batch, Python 2 pickles of {data: N x 3072 uint8 rows
//    laid out as above, labels, ...}, and batches.meta; read by the strict
//    reader of loader/datasets/cifar_pickle.h, never by a general unpickler.
// `dir` is that folder itself or the folder holding it (the bin layout wins
// when both are there). Samples are read with pread per row, so the page cache
// is shared by forked workers and a file truncated in use is a DataError.
// Fields: "image" [3, H, W] from the transform chain (empty chain: 3x32x32
// float32 in [0, 1]), "label" int64.
// A folder in neither layout is a DataError saying which layouts are accepted;
// a missing file, a binary size not a multiple of 3073, or a pickle other than
// the published structure is a DataError naming the file (and byte offset); a
// label above 9 is a DataError naming the file and sample.
// Owns its descriptors and transform chain (in a State defined in cifar10.cc).
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "seedloader/dataset.h"
#include "seedloader/datasets/split.h"
#include "seedloader/transforms/compose.h"

namespace seedloader {

class Cifar10 final : public Dataset {
 public:
  static constexpr std::uint64_t kRecordBytes = 3073;

  Cifar10(std::string dir, Split split, Compose transform = Compose());
  ~Cifar10() override;
  Cifar10(const Cifar10&) = delete;
  Cifar10& operator=(const Cifar10&) = delete;

  std::uint64_t size() const override;
  const SampleLayout& layout() const override;
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  struct State;
  std::unique_ptr<const State> state_;
};

}  // namespace seedloader
