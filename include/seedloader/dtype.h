// DType: the element types of a sample's fields and a batch's tensors, their sizes
// and names, and the C++ type of each (dtype_of). Part of base, so that the
// transforms that produce tensors and the loader that stores them share it.
// Plain values and pure functions: safe anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

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

}  // namespace seedloader
