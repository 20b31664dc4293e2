#include "seedloader/sample_layout.h"

#include "seedloader/error.h"

namespace seedloader {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kU8:
    case DType::kBool:
    case DType::kI8:
      return 1;
    case DType::kI32:
      return 4;
    case DType::kF32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kF64:
      return 8;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16:
      return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
    case DType::kF32:
      return "f32";
    case DType::kI64:
      return "i64";
    case DType::kF64:
      return "f64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kBool:
      return "bool";
    case DType::kI8:
      return "i8";
    case DType::kI16:
      return "i16";
  }
  return "?";
}

std::int64_t FieldSpec::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

SampleLayout::SampleLayout(std::vector<FieldSpec> fields) : fields_(std::move(fields)) {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const FieldSpec& f = fields_[i];
    if (f.name.empty())
      throw ConfigError("SampleLayout: field " + std::to_string(i) + " has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (fields_[j].name == f.name) {
        throw ConfigError("SampleLayout: field name '" + f.name + "' appears twice");
      }
    }
    for (std::int64_t d : f.shape) {
      if (d < 0)
        throw ConfigError("SampleLayout: field '" + f.name +
                          "' has a negative dimension");
    }
  }
}

std::size_t SampleLayout::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return i;
  }
  throw ConfigError("SampleLayout: no field named '" + name + "'");
}

std::size_t SampleLayout::bytes_per_sample() const {
  std::size_t total = 0;
  for (const FieldSpec& f : fields_) total += f.bytes();
  return total;
}

}  // namespace seedloader
