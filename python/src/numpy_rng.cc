#include "python/src/numpy_rng.h"

#include <cstdint>

namespace nb = nanobind;

namespace seedloader::python {
namespace {

nb::object join(std::uint64_t hi, std::uint64_t lo) {
  nb::object high = nb::steal(PyLong_FromUnsignedLongLong(hi));
  nb::object shift = nb::steal(PyLong_FromLong(64));
  nb::object low = nb::steal(PyLong_FromUnsignedLongLong(lo));
  nb::object shifted = nb::steal(PyNumber_Lshift(high.ptr(), shift.ptr()));
  if (!shifted.is_valid()) throw nb::python_error();
  nb::object joined = nb::steal(PyNumber_Or(shifted.ptr(), low.ptr()));
  if (!joined.is_valid()) throw nb::python_error();
  return joined;
}

// The high and low 64 bits of a non-negative int below 2^128.
void split(nb::handle value, std::uint64_t& hi, std::uint64_t& lo) {
  lo = PyLong_AsUnsignedLongLongMask(value.ptr());
  nb::object shift = nb::steal(PyLong_FromLong(64));
  nb::object high = nb::steal(PyNumber_Rshift(value.ptr(), shift.ptr()));
  if (!high.is_valid()) throw nb::python_error();
  hi = PyLong_AsUnsignedLongLongMask(high.ptr());
  if (PyErr_Occurred()) throw nb::python_error();
}

// numpy.random's Generator and PCG64 classes, looked up once (a per-sample
// import costs as much as the state hand-over itself). Kept for the process.
struct NumpyRandom {
  nb::handle generator, pcg64;
};

const NumpyRandom& numpy_random() {
  static const NumpyRandom classes = [] {
    nb::module_ m = nb::module_::import_("numpy.random");
    return NumpyRandom{nb::object(m.attr("Generator")).release(),
                       nb::object(m.attr("PCG64")).release()};
  }();
  return classes;
}

nb::object bit_generator_of(nb::handle generator) {
  const NumpyRandom& numpy = numpy_random();
  if (!nb::isinstance(generator, numpy.generator) ||
      !nb::isinstance(generator.attr("bit_generator"), numpy.pcg64)) {
    throw nb::type_error(
        "expected a numpy.random.Generator over PCG64 (the rng a seedloader dataset "
        "is given)");
  }
  return generator.attr("bit_generator");
}

}  // namespace

nb::object new_generator() {
  const NumpyRandom& numpy = numpy_random();
  return numpy.generator(numpy.pcg64(0));
}

Pcg64Stream::RawState generator_state(nb::handle generator) {
  nb::object state = bit_generator_of(generator).attr("state");
  nb::object lcg = state["state"];
  Pcg64Stream::RawState raw;
  split(lcg["state"], raw.state_hi, raw.state_lo);
  split(lcg["inc"], raw.inc_hi, raw.inc_lo);
  raw.has_u32 = nb::cast<int>(state["has_uint32"]) != 0;
  raw.buffered_u32 =
      static_cast<std::uint32_t>(nb::cast<std::uint64_t>(state["uinteger"]));
  return raw;
}

void set_generator_state(nb::handle generator, const Pcg64Stream::RawState& raw) {
  nb::dict lcg;
  lcg["state"] = join(raw.state_hi, raw.state_lo);
  lcg["inc"] = join(raw.inc_hi, raw.inc_lo);
  nb::dict state;
  state["bit_generator"] = "PCG64";
  state["state"] = lcg;
  state["has_uint32"] = raw.has_u32 ? 1 : 0;
  state["uinteger"] = raw.buffered_u32;
  bit_generator_of(generator).attr("state") = state;
}

Pcg64Stream stream_of(nb::handle generator) {
  Pcg64Stream stream(std::array<std::uint64_t, 4>{0, 0, 0, 0});
  stream.set_raw_state(generator_state(generator));
  return stream;
}

}  // namespace seedloader::python
