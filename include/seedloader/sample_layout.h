// SampleLayout: the fixed per-sample shape of a dataset — named fields, each with a
// dtype and a shape (the maximum shape for variable-size fields). A batch slot
// holds each field collated as one contiguous [batch, ...shape] array, so the
// layout fixes the slot size (layout bytes x batch size).
// Immutable after construction; safe to share across threads and fork.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "seedloader/dtype.h"

namespace seedloader {

struct FieldSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;  // per sample; [] is a scalar
  // A variable-size field may fill fewer elements than shape holds; the sample
  // records how many it wrote (see SampleWriter::set_length).
  bool variable = false;

  std::int64_t elements() const;
  std::size_t bytes() const {
    return static_cast<std::size_t>(elements()) * dtype_size(dtype);
  }
};

class SampleLayout {
 public:
  SampleLayout() = default;
  // Throws ConfigError for an empty or duplicate name or a negative dimension.
  explicit SampleLayout(std::vector<FieldSpec> fields);

  const std::vector<FieldSpec>& fields() const { return fields_; }
  std::size_t num_fields() const { return fields_.size(); }
  const FieldSpec& field(std::size_t i) const { return fields_[i]; }
  // Throws ConfigError naming the field when there is none by that name.
  std::size_t index_of(const std::string& name) const;
  // Bytes one sample occupies across all fields.
  std::size_t bytes_per_sample() const;

 private:
  std::vector<FieldSpec> fields_;
};

}  // namespace seedloader
