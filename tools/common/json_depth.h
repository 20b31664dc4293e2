// JSON that users and files hand the tools and the Python package (a mix: spec, a
// mixture state, a checkpoint's metadata), parsed with a bound on its nesting.
// nlohmann's parser reads any depth without recursing, but what is done with the
// document after (items(), copies, comparisons) recurses once per level: a
// document nested tens of thousands deep would overflow the stack (SIGSEGV).
// None of those formats nests more than a few levels, so parse_json() refuses,
// as it reads them, arrays and objects nested deeper than kMaxJsonDepth. Header
// only, so that the audit library uses it without linking tools_common.
// Stateless.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace seedloader::tools {

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

}  // namespace seedloader::tools
