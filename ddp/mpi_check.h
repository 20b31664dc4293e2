// SL_CHECK_MPI: the checking macro for MPI calls, a thin wrapper over base/check.h's
// formatter. A call that does not return MPI_SUCCESS throws seedloader::CommError
// naming the call, file:line and MPI's own error string. Thread-safe (no shared
// state).
#pragma once

#include <mpi.h>

#include <string>

#include "base/check.h"

namespace seedloader::detail {

[[noreturn]] inline void throw_mpi_error(int code, const char* call, const char* file,
                                         int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  throw_failed_call<CommError>(call, file, line,
                               std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace seedloader::detail

#define SL_CHECK_MPI(call) \
  SL_CHECK_RESULT(call, MPI_SUCCESS, ::seedloader::detail::throw_mpi_error)
