#include "seedloader/dataset.h"

#include "seedloader/derive.h"
#include "seedloader/error.h"

namespace seedloader {

void SampleWriter::set_length(std::size_t f, std::uint64_t n) {
  const FieldSpec& spec = layout_.field(f);
  if (n > static_cast<std::uint64_t>(spec.elements())) {
    throw DataError("sample " + std::to_string(index_) + ": field '" + spec.name +
                    "' needs " + std::to_string(n) +
                    " elements but the layout declares " +
                    std::to_string(spec.elements()));
  }
  lengths_[f] = n;
}

void SampleWriter::check_dtype(std::size_t f, DType want) const {
  const FieldSpec& spec = layout_.field(f);
  if (spec.dtype != want) {
    throw DataError("sample " + std::to_string(index_) + ": field '" + spec.name +
                    "' is " + dtype_name(spec.dtype) + ", written as " +
                    dtype_name(want));
  }
}

Rng Dataset::sample_rng(std::uint64_t base_seed, std::uint64_t epoch,
                        std::uint64_t index) const {
  return sample_stream(base_seed, epoch, index);
}

Dataset::Neighbours Dataset::replacements(std::uint64_t) const { return {0, size()}; }

}  // namespace seedloader
