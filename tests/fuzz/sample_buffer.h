// A place for a dataset to write one sample (one buffer per field of its layout,
// as a batch slot row would be), and read_samples(), which reads a dataset's
// first, middle and last samples through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/seed_sequence.h"

namespace seedloader::fuzz {

class SampleBuffer {
 public:
  SampleBuffer(const SampleLayout& layout, std::uint64_t index) {
    for (const FieldSpec& f : layout.fields()) {
      storage_.emplace_back(f.bytes() + 8);  // +8: never zero-sized
      pointers_.push_back(storage_.back().data());
    }
    lengths_.resize(layout.num_fields());
    writer_.emplace(layout, pointers_, lengths_, index);
  }
  SampleWriter& writer() { return *writer_; }

 private:
  std::vector<std::vector<std::byte>> storage_;
  std::vector<std::byte*> pointers_;
  std::vector<std::uint64_t> lengths_;
  std::optional<SampleWriter> writer_;
};

// Reads samples 0, size/2 and size-1 (those that exist), each with a fresh stream.
inline void read_samples(const Dataset& dataset) {
  const std::uint64_t n = dataset.size();
  if (n == 0) return;
  for (std::uint64_t index : {std::uint64_t{0}, n / 2, n - 1}) {
    SampleBuffer buffer(dataset.layout(), index);
    Rng rng(SeedSequence(index + 1));
    dataset.get(index, rng, buffer.writer());
  }
}

}  // namespace seedloader::fuzz
