#include "remote/object_url.h"

#include "seedloader/error.h"

namespace seedloader::remote {

std::optional<ObjectUrl> ObjectUrl::parse(const std::string& text) {
  const std::size_t sep = text.find("://");
  if (sep == std::string::npos) return std::nullopt;
  ObjectUrl url;
  const std::string scheme = text.substr(0, sep);
  // The message shows the text only up to its host: what follows may be anything.
  const auto fail = [&](const std::string& why) {
    return ConfigError("URL " + scheme + "://…: " + why);
  };
  if (scheme == "http") {
    url.scheme = Scheme::kHttp;
  } else if (scheme == "https") {
    url.scheme = Scheme::kHttps;
  } else if (scheme == "s3") {
    url.scheme = Scheme::kS3;
  } else {
    throw fail("unknown scheme '" + scheme + "' (http, https or s3)");
  }
  std::string rest = text.substr(sep + 3);
  if (rest.find_first_of("?#") != std::string::npos)
    throw fail("a query or fragment is not part of an object name");
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "" : rest.substr(slash);
  if (const std::size_t at = authority.rfind('@'); at != std::string::npos) {
    if (url.scheme == Scheme::kS3)
      throw fail("credentials come from the AWS variables or ~/.aws, not the URL");
    url.userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
  }
  if (authority.empty()) throw fail(url.scheme == Scheme::kS3 ? "no bucket" : "no host");
  // A port is digits. Anything else after a ':' is likely a password whose URL
  // lost its '@' to an unencoded '/', so the text is not shown.
  if (const std::size_t colon = authority.rfind(':');
      colon != std::string::npos && authority.find(']') == std::string::npos &&
      (colon + 1 == authority.size() ||
       authority.find_first_not_of("0123456789", colon + 1) != std::string::npos))
    throw fail("the port after ':' is not a number (encode '/' and '@' in a password)");
  // "user:2024/x@host": a password of digits and an unencoded '/' would pass
  // for a port and a path; an '@' in the first path segment after a port is
  // refused for it.
  if (const std::size_t colon = authority.rfind(':');
      colon != std::string::npos && authority.find(']') == std::string::npos &&
      url.path.find('@') < url.path.find('/', 1))
    throw fail("an '@' after a port: encode '/' and '@' in a password");
  url.host = authority;
  if (url.scheme == Scheme::kS3) {
    // The key has no leading '/': s3://bucket/a/b names key "a/b".
    url.path = url.path.empty() ? "" : url.path.substr(1);
  } else if (url.path.empty()) {
    url.path = "/";
  }
  return url;
}

ObjectUrl ObjectUrl::sibling(const std::string& name) const {
  ObjectUrl out = *this;
  const std::size_t slash = path.rfind('/');
  out.path = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  if (scheme == Scheme::kS3) {
    out.path += name;  // a key is raw bytes; S3Config::http_url() encodes it
    return out;
  }
  // An http(s) path is in its encoded form: `name` is one segment, so every byte
  // but the unreserved ones is encoded ('/', '%' and '.' of ".." included).
  static constexpr char kHex[] = "0123456789ABCDEF";
  const bool dots = name == "." || name == "..";
  for (const unsigned char ch : name) {
    if (!dots &&
        ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~')) {
      out.path += static_cast<char>(ch);
    } else {
      out.path += '%';
      out.path += kHex[ch >> 4];
      out.path += kHex[ch & 15];
    }
  }
  return out;
}

std::string ObjectUrl::display() const {
  switch (scheme) {
    case Scheme::kHttp:
      return "http://" + host + path;
    case Scheme::kHttps:
      return "https://" + host + path;
    case Scheme::kS3:
      return "s3://" + host + "/" + path;
  }
  return {};
}

}  // namespace seedloader::remote
