#include "seedloader/error.h"

#include <cctype>

namespace seedloader {
namespace {

bool ends_word(char ch) {
  return std::isspace(static_cast<unsigned char>(ch)) || ch == '"' || ch == '\'' ||
         ch == '`' || ch == '<' || ch == '>';
}

}  // namespace

std::string redact_credentials(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t done = 0;
  for (std::size_t sep = text.find("://"); sep != std::string_view::npos;
       sep = text.find("://", sep + 3)) {
    const std::size_t start = sep + 3;
    std::size_t end = start;  // the authority: up to a path, query, fragment or space
    while (end < text.size() && text[end] != '/' && text[end] != '?' &&
           text[end] != '#' && !ends_word(text[end]))
      ++end;
    const std::string_view authority = text.substr(start, end - start);
    const std::size_t at = authority.rfind('@');
    std::size_t cut = at == std::string_view::npos ? std::string_view::npos : start + at;
    if (cut == std::string_view::npos) {
      // "user:pa/ss@host" (a ':' not followed by a port) or "user:2024/x@host" (a
      // password of digits, then a '/'): an '@' further on, up to the end of the
      // word, or of the first path segment after digits that may be a port.
      const std::size_t bracket =
          !authority.empty() && authority.front() == '[' ? authority.find(']') : 0;
      const std::size_t colon =
          bracket == std::string_view::npos ? bracket : authority.find(':', bracket);
      if (colon != std::string_view::npos) {
        const bool port = authority.find_first_not_of("0123456789", colon + 1) ==
                          std::string_view::npos;
        std::size_t until = end + (port && end < text.size() && text[end] == '/');
        while (until < text.size() && !ends_word(text[until]) &&
               !(port && text[until] == '/'))
          ++until;
        const std::size_t later = text.substr(0, until).rfind('@');
        if (later != std::string_view::npos && later >= end) cut = later;
      }
    }
    if (cut == std::string_view::npos) continue;
    out.append(text.substr(done, start - done));
    done = cut + 1;
    sep = cut - 2;  // the next search starts after the removed part
  }
  out.append(text.substr(done));
  return out;
}

}  // namespace seedloader
