// error_of(f): the message of the seedloader::Error that f() throws, or
// "(no error)" when it throws none, for tests that check what a failure says.
#pragma once

#include <functional>
#include <string>

#include "seedloader/error.h"

namespace seedloader::testing_util {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace seedloader::testing_util
