// JSON that users and files hand the library, the tools and the Python package (a
// mix: spec, a mixture state, a checkpoint's metadata), parsed with a bound on its
// nesting.
// nlohmann's parser reads any depth without recursing, but what is done with the
// document after (items(), copies, comparisons) recurses once per level: a
// document nested tens of thousands deep would overflow the stack (SIGSEGV).
// None of those formats nests more than a few levels, so parse_json() refuses,
// as it reads them, arrays and objects nested deeper than kMaxJsonDepth.
// Their counts (steps, sizes, positions) are read with json_unsigned(): nlohmann's
// get<std::uint64_t>() converts a float such as 1.1e20 outside the type's range
// (undefined behaviour) and a negative integer by wrapping it.
// Header only, in base so that every module may read JSON through it (the loader's
// mixture state, the audit, the tools); base itself links no JSON library, so
// what includes this links nlohmann_json. Stateless.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace seedloader {

inline constexpr int kMaxJsonDepth = 64;

// The refusal of a document nested too deep: a nlohmann::json::exception, so that
// whatever already turns a malformed document into an error naming its input
// does the same for this one.
class JsonTooDeep : public nlohmann::json::exception {
 public:
  JsonTooDeep()
      : nlohmann::json::exception(
            0, ("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                " arrays and objects")
                   .c_str()) {}
};

// The refusal of a count that is not a non-negative integer below 2^64: a
// nlohmann::json::exception, like JsonTooDeep.
class JsonNotUnsigned : public nlohmann::json::exception {
 public:
  explicit JsonNotUnsigned(const std::string& value)
      : nlohmann::json::exception(
            0, ("expected a non-negative integer below 2^64, found " + value).c_str()) {}
};

// `v` as an unsigned integer; JsonNotUnsigned for anything else (a float, a
// negative number, a string).
template <typename Json>
std::uint64_t json_unsigned(const Json& v) {
  if (!v.is_number_unsigned()) throw JsonNotUnsigned(v.dump().substr(0, 40));
  return v.template get<std::uint64_t>();
}

// `v`, an array, as unsigned integers; JsonNotUnsigned at the first that is not.
template <typename Json>
std::vector<std::uint64_t> json_unsigned_list(const Json& v) {
  if (!v.is_array()) throw JsonNotUnsigned(v.dump().substr(0, 40));
  std::vector<std::uint64_t> out;
  out.reserve(v.size());
  for (const Json& e : v) out.push_back(json_unsigned(e));
  return out;
}

// `text` as Json (nlohmann::json or ordered_json). Throws Json::exception for text
// that is not JSON, and JsonTooDeep (one too) at the first array or object that
// would open inside kMaxJsonDepth others.
template <typename Json>
Json parse_json(std::string_view text) {
  const typename Json::parser_callback_t bound =
      [](int depth, typename Json::parse_event_t event, Json&) {
        if ((event == Json::parse_event_t::object_start ||
             event == Json::parse_event_t::array_start) &&
            depth >= kMaxJsonDepth)
          throw JsonTooDeep();
        return true;
      };
  return Json::parse(text, bound);
}

}  // namespace seedloader
