#include "remote/s3_config.h"

#include <cctype>

#include "remote/aws_credentials.h"
#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

std::string percent_encode(const std::string& key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

S3Config S3Config::from_environment(const AwsEnvironment& env, const HttpClient& http,
                                    bool anonymous) {
  S3Config c;
  if (const std::string r = env.get("AWS_REGION"); !r.empty()) {
    c.region = r;
  } else if (const std::string d = env.get("AWS_DEFAULT_REGION"); !d.empty()) {
    c.region = d;
  }
  c.endpoint = env.get("AWS_ENDPOINT_URL_S3");
  if (c.endpoint.empty()) c.endpoint = env.get("AWS_ENDPOINT_URL");
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  // Without a scheme curl would guess http and the request could not be matched to
  // the origin its credentials belong to.
  if (!c.endpoint.empty() && c.endpoint.rfind("http://", 0) != 0 &&
      c.endpoint.rfind("https://", 0) != 0)
    throw ConfigError("AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL '" + c.endpoint +
                      "' is not an http:// or https:// URL");

  if (anonymous || env.flag("AWS_NO_SIGN_REQUEST")) return c;
  AwsCredentials found = CredentialChain::standard().find({env, http, c.region});
  c.access_key = std::move(found.access_key);
  c.secret_key = std::move(found.secret_key);
  c.session_token = std::move(found.session_token);
  c.credential_source = std::move(found.source);
  c.expiration = found.expiration;
  c.found_at = env.now();
  return c;
}

std::string S3Config::http_url(const ObjectUrl& object) const {
  const std::string key = percent_encode(object.path);
  // A bucket name with a dot does not match AWS's wildcard certificate as a host
  // name: such buckets are asked path-style.
  if (!endpoint.empty()) return endpoint + "/" + object.host + "/" + key;
  if (object.host.find('.') != std::string::npos)
    return "https://s3." + region + ".amazonaws.com/" + object.host + "/" + key;
  return "https://" + object.host + ".s3." + region + ".amazonaws.com/" + key;
}

}  // namespace seedloader::remote
