#include "remote/credential_io.h"
#include "remote/credential_providers.h"
#include "seedloader/error.h"

namespace seedloader::remote {

CredentialLookup ContainerCredentials::resolve(const CredentialContext& context) const {
  const AwsEnvironment& env = context.env;
  const std::string relative = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  std::string url = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!relative.empty()) url = "http://169.254.170.2" + relative;
  if (url.empty())
    return {std::nullopt,
            "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and "
            "_FULL_URI unset)"};
  const std::string variable = relative.empty()
                                   ? "AWS_CONTAINER_CREDENTIALS_FULL_URI"
                                   : "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
  const std::string source = "container credentials at " + url + " (" + variable + ")";
  if (!plain_http_allowed(url, true))
    throw ConfigError(variable + "=" + url +
                      ": plain http only to a loopback address literal or the ECS and "
                      "EKS credential addresses; use https");
  HttpRequest request;
  request.url = url;
  request.timeout = std::chrono::seconds(5);
  request.no_proxy = true;
  const std::string token_file = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  std::string token = env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (!token_file.empty())
    token = read_token_file(token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  register_secret(token);
  if (token.find_first_of("\r\n") != std::string::npos)
    throw ConfigError("the container authorization token holds a line break");
  if (!token.empty()) request.headers.push_back("Authorization: " + token);
  const CredentialReply r = ask(context.http, request);
  if (r.status != 200) throw ConfigError(source + ": " + r.text());
  return {credentials_from_json(r.body, source), ""};
}

}  // namespace seedloader::remote
