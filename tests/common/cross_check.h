// Cross-checks against numpy, torch or Python's own modules run through
// /usr/bin/python3. Where that interpreter lacks the module, the check is
// skipped, unless SEEDLOADER_REQUIRE_CROSS_CHECKS=1 (CI sets it): then a
// cross-check that cannot run fails, so a broken set-up cannot pass as green.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader::testing_util {

inline bool cross_checks_required() {
  const char* v = std::getenv("SEEDLOADER_REQUIRE_CROSS_CHECKS");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

// Writes `script` to `name` in the process's temporary directory and runs it
// with /usr/bin/python3 and `args`, stdout and stderr merged.
inline CommandResult run_python(const std::string& name, const std::string& script,
                                const std::string& args = "") {
  const std::string path = process_temp_dir() + name;
  {
    std::ofstream f(path);
    f << script;
  }
  return run_command("/usr/bin/python3 " + path + " " + args + " 2>&1");
}

}  // namespace seedloader::testing_util

// Skips (or, under SEEDLOADER_REQUIRE_CROSS_CHECKS=1, fails) the current test
// when /usr/bin/python3 cannot import `module` (a string literal). Use in a test
// body or SetUp().
#define SL_REQUIRE_PYTHON_MODULE(module)                                               \
  do {                                                                                 \
    if (!::seedloader::testing_util::python_has(module)) {                             \
      if (::seedloader::testing_util::cross_checks_required()) {                       \
        FAIL() << "/usr/bin/python3 cannot import " module                             \
                  " and SEEDLOADER_REQUIRE_CROSS_CHECKS=1 asks for every cross-check"; \
      }                                                                                \
      GTEST_SKIP() << "/usr/bin/python3 cannot import " module;                        \
    }                                                                                  \
  } while (0)
