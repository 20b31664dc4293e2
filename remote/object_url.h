// ObjectUrl: where a remote object or data set lives, as the user wrote it:
// http://host[:port]/path, https://… or s3://bucket/key. Parsing is strict; a
// string with no "scheme://" is not a URL (a local path). display() is the only
// form any message, trace or checkpoint shows: it drops the user:password an
// http(s) URL may carry, so no secret is ever printed. It is also the request URL
// of an http(s) object (the user and password go to curl on their own, to the
// URL's origin only). A value type.
#pragma once

#include <optional>
#include <string>

namespace seedloader::remote {

struct ObjectUrl {
  enum class Scheme { kHttp, kHttps, kS3 };

  Scheme scheme = Scheme::kHttp;
  std::string host;      // http(s): host[:port]; s3: the bucket
  std::string path;      // http(s): from the '/' after the host; s3: the key
  std::string userinfo;  // http(s) "user:password", empty when absent; never shown

  // std::nullopt when `text` has no "scheme://" (a local path). Throws ConfigError
  // for an unknown scheme, a missing host or bucket, or a URL with a query or
  // fragment (an object name is the whole path).
  static std::optional<ObjectUrl> parse(const std::string& text);

  // The object `name` beside this one: the path up to its last '/', then name
  // as one segment (percent-encoded in an http(s) path, so "../x" or "%2e" name
  // no other place).
  ObjectUrl sibling(const std::string& name) const;
  // The URL without credentials, for messages.
  std::string display() const;
};

}  // namespace seedloader::remote
