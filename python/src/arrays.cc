#include "python/src/arrays.h"

#include <nanobind/ndarray.h>

#include <vector>

#include "seedloader/error.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

template <typename Framework>
nb::object make_array(const TensorView& view, nb::handle owner,
                      const std::vector<std::size_t>& shape,
                      const std::vector<std::int64_t>& strides) {
  // The slot is the batch's own memory: writable, as a collated batch would be.
  nb::ndarray<Framework> array(const_cast<std::byte*>(view.data), shape.size(),
                               shape.data(), owner, strides.data(),
                               dlpack_dtype(view.dtype));
  return nb::cast(array, nb::rv_policy::reference);
}

}  // namespace

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return nb::dtype<std::uint8_t>();
    case DType::kI32:
      return nb::dtype<std::int32_t>();
    case DType::kI64:
      return nb::dtype<std::int64_t>();
    case DType::kF32:
      return nb::dtype<float>();
    case DType::kF64:
      return nb::dtype<double>();
    case DType::kF16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::kBF16:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  }
  throw ConfigError("unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  for (DType d :
       {DType::kU8, DType::kI32, DType::kI64, DType::kF32, DType::kF64, DType::kF16}) {
    if (name == numpy_name(d)) return d;
  }
  throw ConfigError("dtype '" + name +
                    "' is not one a batch field can hold (uint8, int32, int64, float32, "
                    "float64, float16)");
}

const char* numpy_name(DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return "uint8";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kF32:
      return "float32";
    case DType::kF64:
      return "float64";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
  }
  return "unknown";
}

nb::object export_view(const TensorView& view, nb::handle owner, ArrayFormat format) {
  if (format == ArrayFormat::kNumpy && view.dtype == DType::kBF16)
    throw ConfigError(
        "numpy has no bfloat16: use format='torch', or a float16 or "
        "float32 output");
  const auto item = static_cast<std::int64_t>(dtype_size(view.dtype));
  std::vector<std::size_t> shape(view.shape.begin(), view.shape.end());
  std::vector<std::int64_t> strides;  // DLPack counts strides in elements
  for (std::int64_t s : view.strides) strides.push_back(s / item);
  return format == ArrayFormat::kTorch
             ? make_array<nb::pytorch>(view, owner, shape, strides)
             : make_array<nb::numpy>(view, owner, shape, strides);
}

}  // namespace seedloader::python
