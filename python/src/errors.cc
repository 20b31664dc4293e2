#include "python/src/errors.h"

#include <nanobind/stl/string.h>

#include <exception>

#include "seedloader/error.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

// The classes, owned for the life of the process (the module never unloads).
struct ErrorTypes {
  nb::handle error, config, data, worker, timeout, comm;
};

ErrorTypes& types() {
  static ErrorTypes t;
  return t;
}

nb::object known_or_none(long long v) {
  if (v < 0) return nb::none();
  return nb::int_(v);
}

void raise_worker_error(const WorkerError& e) {
  const WorkerFailure& f = e.failure();
  nb::object exc = types().worker(e.what(), nb::arg("worker") = known_or_none(f.worker),
                                  nb::arg("pid") = known_or_none(f.pid),
                                  nb::arg("signal") = known_or_none(f.signal),
                                  nb::arg("exit_code") = known_or_none(f.exit_code),
                                  nb::arg("batch") = known_or_none(f.batch),
                                  nb::arg("index") = known_or_none(f.index));
  PyErr_SetObject(types().worker.ptr(), exc.ptr());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const WorkerError& e) {
    raise_worker_error(e);
  } catch (const ConfigError& e) {
    PyErr_SetString(types().config.ptr(), e.what());
  } catch (const DataError& e) {
    PyErr_SetString(types().data.ptr(), e.what());
  } catch (const TimeoutError& e) {
    PyErr_SetString(types().timeout.ptr(), e.what());
  } catch (const CommError& e) {
    PyErr_SetString(types().comm.ptr(), e.what());
  } catch (const Error& e) {
    PyErr_SetString(types().error.ptr(), e.what());
  }
}

}  // namespace

void register_errors() {
  nb::module_ errors = nb::module_::import_("seedloader._errors");
  ErrorTypes& t = types();
  t.error = nb::object(errors.attr("Error")).release();
  t.config = nb::object(errors.attr("ConfigError")).release();
  t.data = nb::object(errors.attr("DataError")).release();
  t.worker = nb::object(errors.attr("WorkerError")).release();
  t.timeout = nb::object(errors.attr("TimeoutError")).release();
  t.comm = nb::object(errors.attr("CommError")).release();
  nb::register_exception_translator(translate);
}

nb::handle data_error_type() { return types().data; }

std::string describe_python_error(nb::python_error& e) {
  nb::object describe =
      nb::module_::import_("seedloader._errors").attr("describe_exception");
  return nb::cast<std::string>(describe(e.value()));
}

}  // namespace seedloader::python
