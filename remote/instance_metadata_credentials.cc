#include <cstdio>
#include <cstdlib>

#include "remote/credential_io.h"
#include "remote/credential_providers.h"
#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

// The variable's number, `fallback` when unset. Throws ConfigError when it is not
// a number in [low, high].
double metadata_setting(const AwsEnvironment& env, const char* name, double fallback,
                        double low, double high) {
  const std::string text = env.get(name);
  if (text.empty()) return fallback;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= low && v <= high)) {
    char range[64];
    std::snprintf(range, sizeof range, "%g to %g", low, high);
    throw ConfigError(std::string(name) + "=" + text + ": not a number from " + range);
  }
  return v;
}

}  // namespace

CredentialLookup InstanceMetadataCredentials::resolve(
    const CredentialContext& context) const {
  const AwsEnvironment& env = context.env;
  if (env.flag("AWS_EC2_METADATA_DISABLED"))
    return {std::nullopt,
            "the instance metadata service (AWS_EC2_METADATA_DISABLED=true)"};
  std::string endpoint = env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  const bool chosen = !endpoint.empty();  // unreachable then is an error, not "not EC2"
  if (endpoint.empty()) endpoint = "http://169.254.169.254";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const double timeout_s =
      metadata_setting(env, "AWS_METADATA_SERVICE_TIMEOUT", 1, 0.1, 3600);
  const int attempts = static_cast<int>(
      metadata_setting(env, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", 1, 1, 100));
  const std::string source = "the instance metadata service at " + endpoint;
  const auto request = [&](HttpRequest::Method method, const std::string& url,
                           const std::string& header) {
    HttpRequest r;
    r.method = method;
    r.url = url;
    r.headers = {header};
    r.timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    r.no_proxy = true;
    return r;
  };
  CredentialReply token;
  // AWS_METADATA_SERVICE_NUM_ATTEMPTS bounds the token request only: asked again
  // at once while no answer or a 5xx comes.
  for (int a = 0; a < attempts; ++a) {
    token = ask(context.http,
                request(HttpRequest::Method::kPut, endpoint + "/latest/api/token",
                        "X-aws-ec2-metadata-token-ttl-seconds: 21600"));
    if (token.error.empty() && token.status < 500) break;
  }
  if (!token.error.empty() && chosen)
    throw ConfigError(source + " (AWS_EC2_METADATA_SERVICE_ENDPOINT): " + token.error);
  // No metadata service (not on EC2), or another cloud's at the same address: the
  // chain ends there, as the CLI's.
  if (!token.error.empty() || token.status == 403 || token.status == 404 ||
      token.status == 405)
    return {std::nullopt, source + " (" + token.text() + ")"};
  if (token.status != 200) throw ConfigError(source + ": session token: " + token.text());
  register_secret(trim_blank(token.body));
  const std::string header = "X-aws-ec2-metadata-token: " + trim_blank(token.body);
  const std::string base = endpoint + "/latest/meta-data/iam/security-credentials/";
  const CredentialReply roles =
      ask(context.http, request(HttpRequest::Method::kGet, base, header));
  if (roles.status == 404)
    return {std::nullopt, source + " (the instance has no IAM role)"};
  if (roles.status != 200) throw ConfigError(source + ": its IAM role: " + roles.text());
  const std::string role = trim_blank(roles.body.substr(0, roles.body.find('\n')));
  if (role.empty() || role.find_first_of("/?#") != std::string::npos)
    throw ConfigError(source + ": its IAM role's name is not one path segment");
  const CredentialReply r =
      ask(context.http, request(HttpRequest::Method::kGet, base + role, header));
  if (r.status != 200) throw ConfigError(source + ": role " + role + ": " + r.text());
  return {credentials_from_json(r.body, source + " (role " + role + ")"), ""};
}

}  // namespace seedloader::remote
