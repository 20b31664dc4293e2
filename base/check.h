// The one formatter behind every call-checking macro of the project, and
// SL_CHECK_SYS, the macro for POSIX calls. Each library's macro (SL_CHECK_CUDA in
// base/cuda_check.h, SL_CHECK_NCCL and SL_CHECK_CUBLAS in ddp/cuda_check.h,
// SL_CHECK_MPI in ddp/mpi_check.h) is one SL_CHECK_RESULT line: it only asks its
// library for the error text and throws through throw_failed_call(), so every
// message reads
//   "<call text> failed at <file>:<line>: <library's error string>".
// Stateless; thread-safe.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>

#include "seedloader/error.h"

namespace seedloader::detail {

// "CALL failed at FILE:LINE: DETAIL".
std::string failed_call_message(const char* call, const char* file, int line,
                                std::string_view detail);

// Throws E (an Error type) carrying failed_call_message().
template <typename E = Error>
[[noreturn]] void throw_failed_call(const char* call, const char* file, int line,
                                    std::string_view detail) {
  throw E(failed_call_message(call, file, line, detail));
}

// Throws Error with strerror(err) as the detail.
[[noreturn]] void throw_system_error(const char* call, const char* file, int line,
                                     int err);

// Yields `result`, or throws when it is -1 (the POSIX failure value).
template <typename T>
T check_sys(T result, const char* call, const char* file, int line) {
  if (result == static_cast<T>(-1)) throw_system_error(call, file, line, errno);
  return result;
}

}  // namespace seedloader::detail

// The shape of every library's checking macro: evaluates `call` once and, unless
// its result equals `success`, calls `thrower(result, "call", __FILE__, __LINE__)`,
// a [[noreturn]] function that asks the library for its error text.
#define SL_CHECK_RESULT(call, success, thrower)                          \
  do {                                                                   \
    const auto sl_rc_ = (call);                                          \
    if (sl_rc_ != (success)) thrower(sl_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// A POSIX call that returns -1 throws seedloader::Error naming the call, file:line
// and strerror(errno); otherwise the macro yields the call's result.
#define SL_CHECK_SYS(call) \
  ::seedloader::detail::check_sys((call), #call, __FILE__, __LINE__)
