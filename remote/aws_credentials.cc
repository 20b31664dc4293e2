#include "remote/aws_credentials.h"

#include "remote/credential_providers.h"
#include "seedloader/error.h"

namespace seedloader::remote {

CredentialChain::CredentialChain(
    std::vector<std::unique_ptr<const CredentialProvider>> providers)
    : providers_(std::move(providers)) {}

const CredentialChain& CredentialChain::standard() {
  static const CredentialChain* chain = [] {
    std::vector<std::unique_ptr<const CredentialProvider>> list;
    list.push_back(std::make_unique<EnvironmentCredentials>());
    list.push_back(std::make_unique<WebIdentityCredentials>());
    list.push_back(std::make_unique<ProfileCredentials>());
    list.push_back(std::make_unique<ContainerCredentials>());
    list.push_back(std::make_unique<InstanceMetadataCredentials>());
    // Never destroyed: a thread of a process that is exiting may still use it.
    return new CredentialChain(std::move(list));
  }();
  return *chain;
}

AwsCredentials CredentialChain::find(const CredentialContext& context) const {
  std::string looked;
  for (const auto& provider : providers_) {
    CredentialLookup found = provider->resolve(context);
    if (found.credentials) {
      AwsCredentials& c = *found.credentials;
      // What signs the requests stays out of every message, whoever echoes it.
      for (const std::string* secret : {&c.access_key, &c.secret_key, &c.session_token})
        register_secret(*secret);
      return std::move(c);
    }
    looked += "\n  " + found.looked;
  }
  throw ConfigError(
      "no AWS credentials for s3:// requests; looked in:" + looked +
      "\nfor a public bucket, set AWS_NO_SIGN_REQUEST=true to send unsigned requests");
}

}  // namespace seedloader::remote
