// InMemoryDataset: a small dataset for tests, examples and benchmarks whose
// samples are held in flat per-field arrays (filled by the caller before the
// loader forks); get() copies a row and draws nothing. Owns its arrays.
// Immutable once the loader runs; get() is safe across processes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "seedloader/dataset.h"

namespace seedloader {

class InMemoryDataset : public Dataset {
 public:
  // Allocates `size` zeroed samples of `layout`.
  InMemoryDataset(SampleLayout layout, std::uint64_t size);

  // Field f of every sample, [size, ...shape], for filling before use.
  // Throws ConfigError if T is not the field's dtype.
  template <typename T>
  std::span<T> field(std::size_t f) {
    check_dtype(f, dtype_of<T>());
    return {reinterpret_cast<T*>(data_[f].data()), data_[f].size() / sizeof(T)};
  }

  std::uint64_t size() const override { return size_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  void check_dtype(std::size_t f, DType want) const;

  SampleLayout layout_;
  std::uint64_t size_;
  std::vector<std::vector<std::byte>> data_;  // per field
};

}  // namespace seedloader
