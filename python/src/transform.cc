// seedloader.Transform: a C++ transform chain (the textual spec of
// seedloader/transforms/spec.h) applied from Python to one image with a numpy
// Generator, so a Python dataset can keep decoding and augmentation in C++.
// The Generator's stream is used and advanced exactly as the engine would use
// the same stream: a worker drawing through it stays on its contract.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <memory>
#include <opencv2/core.hpp>

#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/numpy_rng.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

std::string describe_dtype(nb::dlpack::dtype d) {
  const char* kind =
      d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float) ? "float"
      : d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int) ? "int"
      : d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt)
          ? "uint"
          : "a non-numeric type of ";
  return kind + std::to_string(d.bits);
}

// Any CPU array: the dtype is checked here, so that a float image is refused
// with a message instead of being converted to uint8 behind the caller's back.
using ImageIn = nb::ndarray<nb::device::cpu>;

class PyTransform {
 public:
  explicit PyTransform(const std::string& spec)
      : spec_(spec), chain_(parse_transform_spec(spec)) {}

  // image: HWC (or HW) uint8, RGB. Returns the chain's output: [C, H, W] float32
  // (or uint8 with "u8").
  nb::object apply(const ImageIn& image, nb::handle generator) const {
    if (image.ndim() != 2 && image.ndim() != 3) {
      throw DataError("Transform(" + spec_ + "): the image must be HxW or HxWxC, not " +
                      std::to_string(image.ndim()) + "-dimensional");
    }
    if (image.dtype() != nb::dtype<std::uint8_t>()) {
      throw DataError("Transform(" + spec_ +
                      "): the image must be uint8 (HxWxC, RGB, 0-255), not " +
                      describe_dtype(image.dtype()) +
                      "; the chain itself converts to "
                      "float with totensor or normalize");
    }
    const int channels = image.ndim() == 3 ? static_cast<int>(image.shape(2)) : 1;
    if (channels != 1 && channels != 3) {
      throw DataError("Transform(" + spec_ + "): the image has " +
                      std::to_string(channels) + " channels; 1 or 3 are supported");
    }
    // A copy (which also makes a strided view contiguous): steps such as flips
    // work in place, and the caller's array stays as it was.
    cv::Mat in(static_cast<int>(image.shape(0)), static_cast<int>(image.shape(1)),
               CV_8UC(channels));
    const auto* src = static_cast<const std::uint8_t*>(image.data());
    const bool contiguous =
        (image.ndim() == 2 || image.stride(2) == 1) && image.stride(1) == channels &&
        image.stride(0) == static_cast<std::int64_t>(in.cols) * channels;
    if (contiguous) {
      std::memcpy(in.data, src, in.total() * channels);
    }
    for (int y = 0; !contiguous && y < in.rows; ++y) {
      auto* dst = in.ptr<std::uint8_t>(y);
      for (int x = 0; x < in.cols; ++x) {
        for (int c = 0; c < channels; ++c) {
          const std::int64_t at = y * image.stride(0) + x * image.stride(1) +
                                  (image.ndim() == 3 ? c * image.stride(2) : 0);
          dst[x * channels + c] = src[at];
        }
      }
    }
    Pcg64Stream rng = stream_of(generator);
    cv::Mat out = chain_.apply(std::move(in), rng, nullptr);
    set_generator_state(generator, rng.raw_state());
    return to_array(out);
  }

  std::string describe() const { return "Transform(" + chain_.describe() + ")"; }

 private:
  template <typename T>
  nb::object write(const cv::Mat& image) const {
    const std::size_t c = image.channels(), h = image.rows, w = image.cols;
    auto data = std::make_unique<T[]>(c * h * w);
    chain_.output().write(image, std::span<T>(data.get(), c * h * w));
    nb::capsule owner(data.get(), [](void* p) noexcept { delete[] static_cast<T*>(p); });
    std::size_t shape[3] = {c, h, w};
    nb::ndarray<nb::numpy> array(data.release(), 3, shape, owner, nullptr,
                                 dlpack_dtype(dtype_of<T>()));
    return nb::cast(array);
  }

  nb::object to_array(const cv::Mat& image) const {
    switch (chain_.output().dtype()) {
      case DType::kU8:
        return write<std::uint8_t>(image);
      case DType::kF16:
        return write<Float16>(image);
      case DType::kBF16:
        throw ConfigError(
            "numpy has no bfloat16: a transform applied from Python "
            "returns float32 or float16");
      default:
        return write<float>(image);
    }
  }

  std::string spec_;
  Compose chain_;
};

}  // namespace

void bind_transform(nb::module_& m) {
  nb::class_<PyTransform>(m, "Transform",
                          "A C++ transform chain from its spec, applied to one image.")
      .def(nb::init<const std::string&>(), nb::arg("spec"))
      .def("__call__", &PyTransform::apply, nb::arg("image"), nb::arg("rng"),
           "Applies the chain to an HxWxC (or HxW) uint8 RGB image, drawing from "
           "rng (a numpy Generator over PCG64, advanced in place). Returns the "
           "[C, H, W] output array.")
      .def("__repr__", &PyTransform::describe);
}

}  // namespace seedloader::python
