// SL_CHECK_MPI: the one checking macro for MPI calls. A call that does not return
// MPI_SUCCESS throws seedloader::CommError naming the call text, file:line and
// MPI's own error string. Thread-safe (no shared state).
#pragma once

#include <mpi.h>

#include "rng/error.h"

namespace seedloader::detail {

[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

}  // namespace seedloader::detail

#define SL_CHECK_MPI(call)                                                          \
  do {                                                                              \
    int sl_mpi_rc_ = (call);                                                        \
    if (sl_mpi_rc_ != MPI_SUCCESS)                                                  \
      ::seedloader::detail::throw_mpi_error(sl_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
