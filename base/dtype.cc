#include "seedloader/dtype.h"

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

}  // namespace seedloader
