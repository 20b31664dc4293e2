// CredentialChain: AWS credentials for S3 requests, found where the AWS CLI looks,
// in its order: an ordered list of CredentialProviders (credential_providers.h),
// asked one after the other until one holds credentials. standard() is the CLI's
// list:
//   1. the environment (AWS_ACCESS_KEY_ID, ...);
//   2. web identity, exchanged with STS (EKS pods);
//   3. the profile of the shared credentials or config file;
//   4. container credentials (ECS, EKS Pod Identity);
//   5. the instance metadata service (EC2, IMDSv2).
// Nothing found is a ConfigError listing every place looked. Unsigned requests
// happen only when asked for (AWS_NO_SIGN_REQUEST=true, or FetchOptions::anonymous;
// see S3Config), never because nothing was found. A provider that is set up but
// fails (an unreadable token file, STS refusing, a metadata server that answers
// with an error) throws a ConfigError naming it and the search ends there, never
// falling through to the next provider or to unsigned requests. Messages carry no
// secret or token: each provider gives every token it reads or sends to
// register_secret() (seedloader/error.h), and find() every credential it returns,
// so Error's redaction hides them even where a server echoes them.
// A chain's providers are fixed at construction and keep no state: find() is safe
// across threads and processes.
#pragma once

#include <memory>
#include <vector>

#include "remote/credential_provider.h"

namespace seedloader::remote {

class CredentialChain {
 public:
  explicit CredentialChain(
      std::vector<std::unique_ptr<const CredentialProvider>> providers);
  CredentialChain(const CredentialChain&) = delete;
  CredentialChain& operator=(const CredentialChain&) = delete;

  // The AWS CLI's places, in its order (above).
  static const CredentialChain& standard();

  // The first provider's credentials. Throws ConfigError (see above).
  AwsCredentials find(const CredentialContext& context) const;

 private:
  std::vector<std::unique_ptr<const CredentialProvider>> providers_;
};

}  // namespace seedloader::remote
