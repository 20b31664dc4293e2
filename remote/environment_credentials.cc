#include "remote/credential_providers.h"
#include "seedloader/error.h"

namespace seedloader::remote {

CredentialLookup EnvironmentCredentials::resolve(const CredentialContext& context) const {
  const AwsEnvironment& env = context.env;
  const std::string key = env.get("AWS_ACCESS_KEY_ID");
  if (key.empty()) return {std::nullopt, "the environment (AWS_ACCESS_KEY_ID unset)"};
  AwsCredentials c;
  c.access_key = key;
  c.secret_key = env.get("AWS_SECRET_ACCESS_KEY");
  c.session_token = env.get("AWS_SESSION_TOKEN");
  c.source = "the environment (AWS_ACCESS_KEY_ID)";
  if (c.secret_key.empty())
    throw ConfigError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  return {std::move(c), ""};
}

}  // namespace seedloader::remote
