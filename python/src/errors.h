// C++ errors as Python exceptions. seedloader.Error and its subclasses are
// defined in seedloader/_errors.py (so they have Python docstrings and fields);
// register_errors() installs the translator that raises them with the facts the
// package acts on as attributes, never as text to parse: every error's `code`
// (ErrorCode's name, "batch_failed", ...; None for kUnspecified); WorkerError's
// worker, pid, signal, exit_code, batch, index and exception_type, chained
// (__cause__) to the dataset's exception itself where it was raised in this
// process; TimeoutError's timeout (seconds waited); a SlotHeldError is a
// seedloader.Error with its batch and slots. Call once, at import.
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

// The type of `e`'s exception as describe_python_error names it ("ValueError",
// "mymodule.BadSample"), for the loader to find the type again.
std::string python_type_name(nanobind::python_error& e);

}  // namespace seedloader::python
