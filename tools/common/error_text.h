// What a program prints for an exception that ends it: its message, except that
// an allocation failure (whose what() is a bare "std::bad_alloc") says what it
// means. Input-driven allocations are DataErrors where the library can name the
// file; this covers what is left (a trace too large to hold, say). Stateless.
#pragma once

#include <exception>
#include <new>
#include <string>

namespace seedloader::tools {

inline std::string error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return "out of memory (std::bad_alloc): the input or the options ask for more "
           "memory than this machine has";
  }
  return e.what();
}

}  // namespace seedloader::tools
