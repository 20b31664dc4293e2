// The parts of the seedloader._core module, each bound in its own file.
#pragma once

#include <nanobind/nanobind.h>

namespace seedloader::python {

void bind_transform(nanobind::module_& m);
void bind_datasets(nanobind::module_& m);
void bind_loader(nanobind::module_& m);
void bind_mixture(nanobind::module_& m);

}  // namespace seedloader::python
