#include "seedloader/in_memory_dataset.h"

#include <cstring>

#include "seedloader/error.h"

namespace seedloader {

InMemoryDataset::InMemoryDataset(SampleLayout layout, std::uint64_t size)
    : layout_(std::move(layout)), size_(size) {
  for (const FieldSpec& f : layout_.fields()) data_.emplace_back(f.bytes() * size_);
}

void InMemoryDataset::check_dtype(std::size_t f, DType want) const {
  if (layout_.field(f).dtype != want) {
    throw ConfigError("InMemoryDataset: field '" + layout_.field(f).name + "' is " +
                      dtype_name(layout_.field(f).dtype) + ", accessed as " +
                      dtype_name(want));
  }
}

void InMemoryDataset::get(std::uint64_t index, Rng&, SampleWriter& out) const {
  if (index >= size_) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  for (std::size_t f = 0; f < layout_.num_fields(); ++f) {
    const std::size_t row = layout_.field(f).bytes();
    std::memcpy(out.bytes(f).data(), data_[f].data() + index * row, row);
  }
}

std::string InMemoryDataset::describe() const {
  return "InMemoryDataset(" + std::to_string(size_) + " samples)";
}

}  // namespace seedloader
