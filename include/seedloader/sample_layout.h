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

#include "seedloader/half.h"

namespace seedloader {

// kF16 and kBF16 (IEEE half and bfloat16) are stored as their 16 bits; half.h's
// Float16 / BFloat16 name them for typed access. kBool is one byte, 0 or 1, as
// numpy and torch store it. New types go at the end: the values are stable.
enum class DType : std::uint8_t {
  kU8,
  kI32,
  kI64,
  kF32,
  kF64,
  kF16,
  kBF16,
  kBool,
  kI8,
  kI16
};

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::kF32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::kF64;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::kBool;
}
template <>
constexpr DType dtype_of<std::int8_t>() {
  return DType::kI8;
}
template <>
constexpr DType dtype_of<std::int16_t>() {
  return DType::kI16;
}
template <>
constexpr DType dtype_of<Float16>() {
  return DType::kF16;
}
template <>
constexpr DType dtype_of<BFloat16>() {
  return DType::kBF16;
}

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
