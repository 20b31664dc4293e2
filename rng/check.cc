#include "rng/check.h"

#include <cstring>

namespace seedloader::detail {

void throw_system_error(const char* call, const char* file, int line, int err) {
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
              ": " + std::strerror(err));
}

}  // namespace seedloader::detail
