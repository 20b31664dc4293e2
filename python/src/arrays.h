// Arrays between the engine and Python: DType <-> numpy dtype names, and the
// zero-copy export of a batch field (a TensorView into a shared-memory slot) as a
// torch tensor or numpy array over the same bytes, through DLPack. Call with
// the GIL held.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "seedloader/batch.h"
#include "seedloader/sample_layout.h"

namespace seedloader::python {

enum class ArrayFormat { kTorch, kNumpy };

// numpy's names ("bool", "uint8", "int8", "int16", "int32", "int64", "float16",
// "float32", "float64") and torch's "bfloat16". Throws ConfigError otherwise.
// A bool field crosses DLPack as uint8 bytes; the Python side views it as bool.
DType dtype_from_name(const std::string& name);
const char* numpy_name(DType dtype);

// The DLPack dtype of a field's values (float16 and bfloat16 included).
nanobind::dlpack::dtype dlpack_dtype(DType dtype);

// `view`'s bytes as an array of `format` that keeps `owner` alive until the last
// array (or tensor) made from it is freed.
nanobind::object export_view(const TensorView& view, nanobind::handle owner,
                             ArrayFormat format);

}  // namespace seedloader::python
