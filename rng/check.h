// SL_CHECK_SYS: the one checking macro for POSIX calls. A call that returns -1
// throws seedloader::Error naming the call text, file:line and strerror(errno);
// otherwise the macro yields the call's result.
#pragma once

#include <string>

#include "rng/error.h"

namespace seedloader::detail {

[[noreturn]] void throw_system_error(const char* call, const char* file, int line,
                                     int err);

template <typename T>
T check_sys(T result, const char* call, const char* file, int line);

}  // namespace seedloader::detail

#define SL_CHECK_SYS(call) \
  ::seedloader::detail::check_sys((call), #call, __FILE__, __LINE__)

#include <cerrno>

template <typename T>
T seedloader::detail::check_sys(T result, const char* call, const char* file, int line) {
  if (result == static_cast<T>(-1)) throw_system_error(call, file, line, errno);
  return result;
}
