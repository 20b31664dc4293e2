// C++ errors as Python exceptions. seedloader.Error and its subclasses are
// defined in seedloader/_errors.py (so they have Python docstrings and fields);
// register_errors() installs the translator that raises them, WorkerError with
// its worker, pid, signal, exit_code, batch and index. Call once, at import.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

namespace seedloader::python {

void register_errors();

// seedloader.DataError, for telling a Python dataset's own DataError apart.
nanobind::handle data_error_type();

// The current Python exception of `e` as one line of text:
// "ValueError: bad crop (at file.py:12 in __getitem__)" (seedloader._errors).
std::string describe_python_error(nanobind::python_error& e);

}  // namespace seedloader::python
