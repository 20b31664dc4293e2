// What a program prints for an exception that ends it: its message, without
// credentials (redact_credentials), except that an allocation failure (whose
// what() is a bare "std::bad_alloc") says what it means. Input-driven
// allocations are DataErrors where the library can name the file; this covers
// what is left (a trace too large to hold, say). Stateless.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <new>
#include <string>

#include "seedloader/error.h"

namespace seedloader::tools {

inline std::string error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return "out of memory (std::bad_alloc): the input or the options ask for more "
           "memory than this machine has";
  }
  return redact_credentials(e.what());
}

// Makes `app` print its parse errors, which may echo an option's value (a
// mistyped --data URL with its password), through redact_credentials().
inline void redact_parse_errors(CLI::App& app) {
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return redact_credentials(CLI::FailureMessage::simple(failed, e));
  });
}

}  // namespace seedloader::tools
