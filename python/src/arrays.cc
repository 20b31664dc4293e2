#include "python/src/arrays.h"

#include <nanobind/ndarray.h>

#include <vector>

#include "seedloader/error.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

// Appends the view's strides in elements, as DLPack counts them (the view's are
// bytes).
void append_element_strides(const TensorView& view, std::vector<std::int64_t>& out) {
  const auto item = static_cast<std::int64_t>(dtype_size(view.dtype));
  for (std::int64_t s : view.strides) out.push_back(s / item);
}

nb::object make_numpy_array(const TensorView& view, nb::handle owner) {
  std::vector<std::size_t> shape(view.shape.begin(), view.shape.end());
  std::vector<std::int64_t> strides;
  append_element_strides(view, strides);
  // The slot is the batch's own memory: writable, as a collated batch would be.
  nb::ndarray<nb::numpy> array(const_cast<std::byte*>(view.data), shape.size(),
                               shape.data(), owner, strides.data(),
                               dlpack_dtype(view.dtype));
  return nb::cast(array, nb::rv_policy::reference);
}

// DLPack's managed tensor (its ABI: the tensor, a context and a deleter), with
// the shape and strides it points at and the owner it keeps alive.
struct ManagedView {
  nb::dlpack::dltensor tensor;
  void* context = nullptr;
  void (*deleter)(ManagedView*) = nullptr;
  std::vector<std::int64_t> dims;  // the shape, then the strides in elements
  PyObject* owner = nullptr;
};

// Called by torch when the tensor's storage goes, from whichever thread frees it.
void free_managed_view(ManagedView* m) {
  if (Py_IsInitialized()) {
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_DECREF(m->owner);
    PyGILState_Release(gil);
  }
  delete m;
}

// A capsule torch never consumed (still named "dltensor") frees its view.
void free_unused_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<ManagedView*>(PyCapsule_GetPointer(capsule, "dltensor"));
    m->deleter(m);
  }
}

// A torch tensor over `view` through torch._C._from_dlpack: nanobind's export
// goes through torch.utils.dlpack.from_dlpack, a Python function that queries
// the producer twice first, and a loop pays it for every field of every batch.
nb::object make_torch_tensor(const TensorView& view, nb::handle owner) {
  static PyObject* from_dlpack =
      nb::object(nb::module_::import_("torch._C").attr("_from_dlpack")).release().ptr();
  auto m = std::make_unique<ManagedView>();
  const std::size_t ndim = view.shape.size();
  m->dims.reserve(2 * ndim);
  m->dims.assign(view.shape.begin(), view.shape.end());
  append_element_strides(view, m->dims);
  // The slot is the batch's own memory: writable, as a collated batch would be.
  m->tensor.data = const_cast<std::byte*>(view.data);
  m->tensor.device = {static_cast<std::int32_t>(nb::device::cpu::value), 0};
  m->tensor.ndim = static_cast<std::int32_t>(ndim);
  m->tensor.dtype = dlpack_dtype(view.dtype);
  m->tensor.shape = m->dims.data();
  m->tensor.strides = m->dims.data() + ndim;
  m->deleter = free_managed_view;
  m->owner = owner.ptr();
  Py_INCREF(m->owner);
  nb::object capsule = nb::steal(PyCapsule_New(m.get(), "dltensor", free_unused_capsule));
  if (!capsule.is_valid()) {
    Py_DECREF(m->owner);
    throw nb::python_error();
  }
  m.release();  // the capsule, then torch, owns it
  PyObject* tensor = PyObject_CallOneArg(from_dlpack, capsule.ptr());
  if (tensor == nullptr) throw nb::python_error();
  return nb::steal(tensor);
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
    // Bytes of 0 or 1: the Python side views them as bool (torch 1.13 takes no
    // DLPack bool).
    case DType::kBool:
      return nb::dtype<std::uint8_t>();
    case DType::kI8:
      return nb::dtype<std::int8_t>();
    case DType::kI16:
      return nb::dtype<std::int16_t>();
  }
  throw ConfigError("unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::kBool, DType::kU8, DType::kI8, DType::kI16, DType::kI32,
                  DType::kI64, DType::kF16, DType::kBF16, DType::kF32, DType::kF64}) {
    if (name == numpy_name(d)) return d;
  }
  throw ConfigError(
      "dtype '" + name +
      "' is not one a batch field can hold (bool, uint8, int8, int16, int32, "
      "int64, float16, bfloat16, float32, float64)");
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
    case DType::kBool:
      return "bool";
    case DType::kI8:
      return "int8";
    case DType::kI16:
      return "int16";
  }
  return "unknown";
}

nb::object export_view(const TensorView& view, nb::handle owner, ArrayFormat format) {
  if (format == ArrayFormat::kNumpy && view.dtype == DType::kBF16)
    throw ConfigError(
        "numpy has no bfloat16: use format='torch', or a float16 or "
        "float32 output");
  nb::object array = format == ArrayFormat::kTorch ? make_torch_tensor(view, owner)
                                                   : make_numpy_array(view, owner);
  if (view.dtype == DType::kBool) {  // uint8 bytes over DLPack; the same bytes as bool
    const bool torch = format == ArrayFormat::kTorch;
    nb::object module = nb::module_::import_(torch ? "torch" : "numpy");
    array = array.attr("view")(module.attr(torch ? "bool" : "bool_"));
  }
  return array;
}

}  // namespace seedloader::python
