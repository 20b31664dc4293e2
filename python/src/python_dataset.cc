#include "python/src/python_dataset.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <cstring>

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

PythonDataset::PythonDataset(nb::object dataset, SampleLayout fields, bool takes_rng)
    : dataset_(std::move(dataset)),
      layout_(std::move(fields)),
      takes_rng_(takes_rng),
      generator_(new_generator()) {
  getitem_ = dataset_.attr("__getitem__");
  size_ = nb::len(dataset_);
  nb::module_ helpers = nb::module_::import_("seedloader._dataset");
  check_sample_ = helpers.attr("sample_arrays");
  seed_globals_ = seeding_function();
  nb::list names, dtypes, shapes;
  for (const FieldSpec& f : layout_.fields()) {
    names.append(f.name);
    dtypes.append(numpy_name(f.dtype));
    nb::list shape;
    for (std::int64_t d : f.shape) shape.append(d);
    shapes.append(shape);
  }
  names_ = names;
  dtypes_ = dtypes;
  shapes_ = shapes;
  describe_ = nb::cast<std::string>(dataset_.type().attr("__qualname__"));
}

PythonDataset::~PythonDataset() = default;

void PythonDataset::seed_globals_if_new(const Rng& rng) const {
  if (g_worker < 0) return;                        // never reseed the user's own process
  if (after_last_ && *after_last_ == rng) return;  // the same stream, continued
  seed_python_generators(seed_globals_, rng.raw_state());
}

void PythonDataset::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  nb::gil_scoped_acquire gil;
  std::string failure;
  bool data_error = false;
  try {
    seed_globals_if_new(rng);
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
    data_error = e.matches(data_error_type());
    failure = describe_python_error(e);
  }
  const std::string what = describe_ + "[" + std::to_string(index) + "]: " + failure;
  if (data_error) throw DataError(what);
  throw Error(what);
}

void PythonDataset::write_fields(nb::handle sample, std::uint64_t index,
                                 SampleWriter& out) const {
  nb::object arrays = check_sample_(sample, names_, dtypes_, shapes_, index);
  for (std::size_t f = 0; f < layout_.num_fields(); ++f) {
    auto array = nb::cast<nb::ndarray<nb::c_contig, nb::device::cpu>>(arrays[f]);
    std::span<std::byte> row = out.bytes(f);
    if (array.nbytes() != row.size()) {  // sample_arrays checked it; never trust twice
      throw DataError(describe_ + "[" + std::to_string(index) + "]: field '" +
                      layout_.field(f).name + "' holds " +
                      std::to_string(array.nbytes()) + " bytes, the layout " +
                      std::to_string(row.size()));
    }
    std::memcpy(row.data(), array.data(), row.size());
  }
}

}  // namespace seedloader::python
