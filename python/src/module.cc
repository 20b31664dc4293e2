// seedloader._core: the compiled half of the Python package. The public API is
// the seedloader package (python/seedloader/__init__.py), which wraps this.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "seedloader/audit.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  using namespace seedloader::python;
  // Loaders and datasets that module globals still hold at interpreter exit are
  // not leaks worth a warning to every user.
  nb::set_leak_warnings(false);
  register_errors();
  bind_transform(m);
  bind_datasets(m);
  bind_loader(m);
  bind_mixture(m);
  m.def("audit_trace", &seedloader::audit_trace_json, nb::arg("path"),
        nb::arg("dataset_size").none(), nb::arg("allow_missing") = 0,
        nb::arg("global_batch").none() = nb::none(),
        nb::arg("source_sizes") = std::map<std::string, std::uint64_t>(),
        nb::arg("mixture_state") = std::string(),
        "The seed audit of a trace file as the JSON report text.");
}
