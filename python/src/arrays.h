// Arrays between the engine and Python: DType <-> numpy dtype names, and the
// zero-copy export of a batch field (a TensorView into a shared-memory slot) as a
// torch tensor or numpy array over the same bytes, through DLPack. Call with
// the GIL held.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "seedloader/batch.h"
#include "seedloader/sample_layout.h"

namespace seedloader::python {

enum class ArrayFormat { kTorch, kNumpy };

// "uint8", "int32", "int64", "float32", "float64". Throws ConfigError otherwise.
DType dtype_from_name(const std::string& name);
const char* numpy_name(DType dtype);

// `view`'s bytes as an array of `format` that keeps `owner` alive until the last
// array (or tensor) made from it is freed.
nanobind::object export_view(const TensorView& view, nanobind::handle owner,
                             ArrayFormat format);

}  // namespace seedloader::python
