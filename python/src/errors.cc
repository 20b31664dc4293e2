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

// ErrorCode as the `code` attribute reads it (None: kUnspecified).
nb::object code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBatchFailed:
      return nb::str("batch_failed");
    case ErrorCode::kWorkerInitFailed:
      return nb::str("worker_init_failed");
    case ErrorCode::kWorkerDied:
      return nb::str("worker_died");
    case ErrorCode::kTimedOut:
      return nb::str("timed_out");
    case ErrorCode::kSlotHeld:
      return nb::str("slot_held");
    case ErrorCode::kUnspecified:
      break;
  }
  return nb::none();
}

// Raises `exc`, an instance of `type` made for `e`, with e's code set on it.
void raise_with_code(nb::handle type, nb::object exc, const Error& e) {
  exc.attr("code") = code_name(e.code());
  PyErr_SetObject(type.ptr(), exc.ptr());
}

// Sets `original` as exc's __cause__ where it is a Python exception (one a
// dataset raised in this process), as `raise exc from original` does.
void chain(nb::handle exc, const std::exception_ptr& original) {
  if (!original) return;
  try {
    std::rethrow_exception(original);
  } catch (nb::python_error& p) {
    PyException_SetCause(exc.ptr(), p.value().inc_ref().ptr());  // steals the reference
  } catch (...) {
  }
}

void raise_worker_error(const WorkerError& e) {
  const WorkerFailure& f = e.failure();
  nb::object type_name = nb::none();
  if (!f.exception_type.empty()) type_name = nb::str(f.exception_type.c_str());
  nb::object exc = types().worker(
      e.what(), nb::arg("worker") = known_or_none(f.worker),
      nb::arg("pid") = known_or_none(f.pid), nb::arg("signal") = known_or_none(f.signal),
      nb::arg("exit_code") = known_or_none(f.exit_code),
      nb::arg("batch") = known_or_none(f.batch),
      nb::arg("index") = known_or_none(f.index), nb::arg("exception_type") = type_name);
  chain(exc, f.original);
  raise_with_code(types().worker, std::move(exc), e);
}

void raise_timeout_error(const TimeoutError& e) {
  nb::object waited = nb::none();
  if (e.waited()) waited = nb::float_(e.waited()->count() / 1000.0);
  raise_with_code(types().timeout, types().timeout(e.what(), nb::arg("timeout") = waited),
                  e);
}

void raise_slot_held_error(const SlotHeldError& e) {
  nb::object exc = types().error(e.what());
  exc.attr("batch") = nb::int_(e.batch());
  exc.attr("slots") = nb::int_(e.slots());
  raise_with_code(types().error, std::move(exc), e);
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const WorkerError& e) {
    raise_worker_error(e);
  } catch (const TimeoutError& e) {
    raise_timeout_error(e);
  } catch (const SlotHeldError& e) {
    raise_slot_held_error(e);
  } catch (const ConfigError& e) {
    raise_with_code(types().config, types().config(e.what()), e);
  } catch (const DataError& e) {
    raise_with_code(types().data, types().data(e.what()), e);
  } catch (const CommError& e) {
    raise_with_code(types().comm, types().comm(e.what()), e);
  } catch (const Error& e) {
    raise_with_code(types().error, types().error(e.what()), e);
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

std::string python_type_name(nb::python_error& e) {
  nb::object name = nb::module_::import_("seedloader._errors").attr("type_name");
  return nb::cast<std::string>(name(e.value().type()));
}

}  // namespace seedloader::python
