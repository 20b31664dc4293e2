// Enum-valued command-line options: the names a user types, mapped once at parse
// time by CLI11 to the enum the program switches on, so nothing compares strings
// after parsing. Names are case-sensitive. A bad name fails the parse with CLI11's
// "VALUE not in {a,b}" message (programs exit 2 on it). Pure functions.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

namespace seedloader::tools {

// An enum's names, in the order --help lists them.
template <typename E>
using EnumNames = std::vector<std::pair<std::string, E>>;

// The name `value` has in `names`. REQUIRES: value is one of them.
template <typename E>
const std::string& enum_name(const EnumNames<E>& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  throw std::logic_error("enum_name: a value without a name");
}

// Registers `flag`, filling `value` through `names`; the default shown is the name
// of `value`'s initial value.
template <typename E>
CLI::Option* add_enum_option(CLI::App& app, const std::string& flag, E& value,
                             const EnumNames<E>& names, const std::string& help) {
  // CLI11 runs the transform added last first: the IsMember check rejects every
  // other spelling (including the enum's numbers, which CheckedTransformer would
  // accept), then the Transformer maps the name to the value. Its own description
  // is dropped so --help shows {a,b} as it does for a plain string option.
  return app.add_option(flag, value, help)
      ->transform(CLI::Transformer(names).description(""))
      ->transform(CLI::IsMember(names))
      ->type_name("TEXT")
      ->default_str(enum_name(names, value));
}

}  // namespace seedloader::tools
