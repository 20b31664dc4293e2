// Crossing a stream between the engine (Pcg64Stream) and numpy
// (np.random.Generator over PCG64): the full state moves both ways, the 32-bit
// half-word buffer included, so the numbers drawn on either side continue one
// stream exactly. Call with the GIL held.
#pragma once

#include <nanobind/nanobind.h>

#include "seedloader/pcg64_stream.h"

namespace seedloader::python {

// np.random.Generator(np.random.PCG64(0)), a vessel for set_generator_state().
nanobind::object new_generator();

// Throws TypeError unless `generator` is an np.random.Generator over PCG64.
Pcg64Stream::RawState generator_state(nanobind::handle generator);
void set_generator_state(nanobind::handle generator, const Pcg64Stream::RawState& raw);

// The stream a numpy Generator is at now, as a Pcg64Stream.
Pcg64Stream stream_of(nanobind::handle generator);

}  // namespace seedloader::python
