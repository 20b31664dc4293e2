#include "python/src/python_dataset.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <exception>

#include "python/src/arrays.h"
#include "python/src/errors.h"
#include "python/src/numpy_rng.h"
#include "seedloader/error.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

// Set only in forked workers (each has its own copy of these).
int g_worker = -1;
std::optional<Pcg64Stream::RawState> g_seeded_start;  // the stream last seeded from

bool same(const Pcg64Stream::RawState& a, const Pcg64Stream::RawState& b) {
  return a.state_hi == b.state_hi && a.state_lo == b.state_lo && a.inc_hi == b.inc_hi &&
         a.inc_lo == b.inc_lo;
}

void seed_python_generators(nb::handle seed_globals, const Pcg64Stream::RawState& start) {
  if (g_seeded_start && same(*g_seeded_start, start)) return;
  nb::object probe = new_generator();
  set_generator_state(probe, start);
  seed_globals(probe.attr("bit_generator").attr("state"));
  g_seeded_start = start;
}

nb::object seeding_function() {
  return nb::module_::import_("seedloader._seeding").attr("seed_globals_from_stream");
}

}  // namespace

void enter_python_worker(int worker, const Rng& stream) {
  g_worker = worker;
  seed_python_generators(seeding_function(), stream.raw_state());
}

PythonDataset::PythonDataset(nb::object dataset, SampleLayout fields, nb::object flatten,
                             bool takes_rng, nb::object replay)
    : dataset_(std::move(dataset)),
      flatten_(std::move(flatten)),
      layout_(std::move(fields)),
      takes_rng_(takes_rng),
      generator_(new_generator()),
      replay_(std::move(replay)) {
  getitem_ = dataset_.attr("__getitem__");
  size_ = nb::len(dataset_);
  seed_globals_ = seeding_function();
  // A wrapper of seedloader's own names the dataset it wraps.
  nb::object name = nb::getattr(dataset_, "_seedloader_name", nb::none());
  describe_ =
      nb::cast<std::string>(name.is_none() ? dataset_.type().attr("__qualname__") : name);
}

PythonDataset::~PythonDataset() = default;

void PythonDataset::seed_globals_if_new(const Rng& rng) const {
  if (g_worker < 0) return;                        // never reseed the user's own process
  if (after_last_ && *after_last_ == rng) return;  // the same stream, continued
  seed_python_generators(seed_globals_, rng.raw_state());
}

void PythonDataset::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  nb::gil_scoped_acquire gil;
  try {
    seed_globals_if_new(rng);
    if (!replay_.is_none()) {
      set_generator_state(generator_, rng.raw_state());
      nb::object sample = replay_(index, generator_);
      if (!sample.is_none()) {
        write_fields(sample, index, out);
        rng.set_raw_state(generator_state(generator_));
        after_last_ = rng;
        return;
      }
      replay_ = nb::none();
    }
    if (!takes_rng_) {  // nothing draws from the stream: no hand-over needed
      write_fields(getitem_(index), index, out);
      after_last_ = rng;
      return;
    }
    set_generator_state(generator_, rng.raw_state());
    nb::object sample = getitem_(index, generator_);
    write_fields(sample, index, out);
    rng.set_raw_state(generator_state(generator_));
    after_last_ = rng;
    return;
  } catch (nb::python_error& e) {
    const std::string what =
        describe_ + "[" + std::to_string(index) + "]: " + describe_python_error(e);
    // The exception's type goes with the error, for the loader to raise it again;
    // in the caller's own process (num_workers = 0) the exception itself too, with
    // its traceback, for the loader to chain to the error it raises.
    std::string type = python_type_name(e);
    std::exception_ptr original = g_worker < 0 ? std::current_exception() : nullptr;
    if (e.matches(data_error_type()))
      throw_as_dataset_exception(DataError(what), std::move(type), std::move(original));
    throw_as_dataset_exception(Error(what), std::move(type), std::move(original));
  }
}

void PythonDataset::write_fields(nb::handle sample, std::uint64_t index,
                                 SampleWriter& out) const {
  nb::object arrays = flatten_(sample, index);
  if (nb::len(arrays) != layout_.num_fields()) {  // flatten's contract; never trust twice
    throw DataError(describe_ + "[" + std::to_string(index) +
                    "]: " + std::to_string(nb::len(arrays)) + " fields, the layout has " +
                    std::to_string(layout_.num_fields()));
  }
  for (std::size_t f = 0; f < layout_.num_fields(); ++f) {
    auto array = nb::cast<nb::ndarray<nb::c_contig, nb::device::cpu>>(arrays[f]);
    const FieldSpec& spec = layout_.field(f);
    std::span<std::byte> row = out.bytes(f);
    const bool fits = spec.variable ? array.nbytes() <= row.size() &&
                                          array.nbytes() % dtype_size(spec.dtype) == 0
                                    : array.nbytes() == row.size();
    if (!fits) {
      throw DataError(describe_ + "[" + std::to_string(index) + "]: field '" + spec.name +
                      "' holds " + std::to_string(array.nbytes()) +
                      " bytes, the layout " + std::to_string(row.size()) +
                      (spec.variable ? " at most" : ""));
    }
    std::memcpy(row.data(), array.data(), array.nbytes());
    if (spec.variable) out.set_length(f, array.nbytes() / dtype_size(spec.dtype));
  }
}

}  // namespace seedloader::python
