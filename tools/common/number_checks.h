// CLI11 checks for the numbers users type. CLI11 2.1 reads an unsigned option with
// strtoull, which wraps "-1" to 2^64 - 1 and saturates anything above 2^64 - 1 to
// it, and a floating option with strtold, which takes "nan" and "inf" (and makes
// 1e39 a float infinity); CLI::Range and CLI::PositiveNumber let NaN through, since
// every comparison with it is false. These checks see the text before CLI11
// converts it, so a bad number fails the parse as "--option: why" and the program
// exits 2. Stateless; safe to share.
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace seedloader::tools {

// Text CLI11 reads as an unsigned integer without wrapping: no minus sign and at
// most 2^64 - 1. Narrower types keep CLI11's own range check on top.
inline CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t first = text.find_first_not_of(" \t");
        if (first != std::string::npos && text[first] == '-') {
          return "'" + text + "' is negative; expected an integer >= 0";
        }
        errno = 0;
        char* end = nullptr;
        std::strtoull(text.c_str(), &end, 0);  // as CLI11 reads it
        if (errno == ERANGE) return "'" + text + "' is above 2^64 - 1";
        return {};
      },
      "", "NON_NEGATIVE_INTEGER");
}

// Text that converts to a finite T (the option's type): no nan, no inf, nothing
// that overflows T. Text that is no number at all is left to CLI11's conversion.
template <typename T>
CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(text, value)) return {};
        if (!std::isfinite(value)) return "'" + text + "' is not a finite number";
        return {};
      },
      "", "FINITE");
}

}  // namespace seedloader::tools
