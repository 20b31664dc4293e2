// CredentialProvider: one place AWS credentials may come from (the environment, a
// profile, the instance metadata service, ...), one step of the CredentialChain
// (aws_credentials.h). resolve() says what the place holds: credentials, or
// nothing and why (a line of the chain's "looked in" list). A place that is set up
// but fails (an unreadable token file, an endpoint answering with an error) throws
// ConfigError naming it: the chain stops there, never falling through to the next
// place or to unsigned requests.
// A provider holds no state: everything it reads comes through CredentialContext,
// so one serves any number of threads and processes at once.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "remote/aws_environment.h"
#include "remote/http_client.h"

namespace seedloader::remote {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  // When temporary credentials expire (unset: they do not).
  std::optional<std::chrono::system_clock::time_point> expiration;
  std::string source;  // where they came from, e.g. "web identity (role R)"
};

// What a provider reads: the variables and clock, the client its requests go
// through, and the region the credentials are for (STS's endpoint follows it).
struct CredentialContext {
  const AwsEnvironment& env;
  const HttpClient& http;
  std::string region;
};

// A provider's answer: credentials, or (without them) the place and why it held
// none, e.g. "the environment (AWS_ACCESS_KEY_ID unset)".
struct CredentialLookup {
  std::optional<AwsCredentials> credentials;
  std::string looked;
};

class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;
  // Throws ConfigError when the place is set up but fails.
  virtual CredentialLookup resolve(const CredentialContext& context) const = 0;
};

}  // namespace seedloader::remote
