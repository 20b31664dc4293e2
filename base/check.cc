#include "base/check.h"

#include <cstring>

namespace seedloader::detail {

std::string failed_call_message(const char* call, const char* file, int line,
                                std::string_view detail) {
  std::string message(call);
  message += " failed at ";
  message += file;
  message += ':';
  message += std::to_string(line);
  message += ": ";
  message += detail;
  return message;
}

void throw_system_error(const char* call, const char* file, int line, int err) {
  throw_failed_call(call, file, line, std::strerror(err));
}

}  // namespace seedloader::detail
