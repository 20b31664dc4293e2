// AWS credentials for S3 requests, found where the AWS CLI looks, in its order:
//   1. the environment: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   2. web identity (EKS pods): AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (+
//      AWS_ROLE_SESSION_NAME), exchanged with STS AssumeRoleWithWebIdentity (the
//      token in a POST body) at AWS_ENDPOINT_URL_STS (https, or http to a loopback
//      address), else sts.REGION.amazonaws.com; AWS_ENDPOINT_URL, the S3 store's
//      here, never receives the token;
//   3. the profile AWS_PROFILE (default "default") of the shared credentials file
//      (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), else of the config
//      file (AWS_CONFIG_FILE, default ~/.aws/config, as "[profile NAME]"); a profile
//      that assumes a role (role_arn), runs a credential_process or uses SSO is not
//      supported and says so; one without aws_access_key_id (a region only) is
//      passed over, as the CLI does; a named profile found in neither file is an
//      error;
//   4. container credentials (ECS, EKS Pod Identity):
//      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on 169.254.170.2) or
//      AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a loopback address
//      literal or the ECS and EKS agents' addresses), with the token of
//      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or AWS_CONTAINER_AUTHORIZATION_TOKEN;
//   5. the instance metadata service, IMDSv2 (a session token first, then the
//      role's credentials), at AWS_EC2_METADATA_SERVICE_ENDPOINT (default
//      http://169.254.169.254, where no answer, or a 403/404/405 to the token
//      request, means not on EC2; a named endpoint that does not answer is an
//      error), AWS_METADATA_SERVICE_TIMEOUT seconds (default 1) and
//      AWS_METADATA_SERVICE_NUM_ATTEMPTS (default 1); skipped when
//      AWS_EC2_METADATA_DISABLED=true.
// Nothing found is a ConfigError listing every place looked. Unsigned requests
// happen only when asked for (AWS_NO_SIGN_REQUEST=true, or FetchOptions::anonymous).
// A source that is configured but fails (an unreadable token file, STS refusing,
// a metadata server that answers with an error) is a ConfigError naming it, never a
// fall through to the next source or to unsigned requests. Messages carry no
// secret or token: every token read or sent (web identity, container
// authorization, IMDS session) and every credential found is given to
// register_secret() (seedloader/error.h), so Error's redaction hides it even
// where a server echoes it, and STS's refusal is redacted before it is cut.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace seedloader::remote {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  // When temporary credentials expire (unset: they do not).
  std::optional<std::chrono::system_clock::time_point> expiration;
  std::string source;  // where they came from, e.g. "web identity (role R)"
};

// Finds credentials (see above) for requests in `region`. Throws ConfigError.
AwsCredentials find_aws_credentials(const std::string& region);

// The variable `name`'s value ("" when unset), and whether it says "true" or "1"
// (any case): how the AWS settings are read.
std::string aws_variable(const char* name);
bool aws_flag(const char* name);

// Whether credentials may be sent to `url`: https anywhere; plain http only to
// "localhost" or a loopback address literal (127.0.0.0/8, [::1]), and with
// `container_agents` also to the ECS and EKS credential agents' addresses
// (169.254.170.2, 169.254.170.23, [fd00:ec2::23]). Host names are not resolved.
bool plain_http_allowed(const std::string& url, bool container_agents);

// "2026-12-04T17:00:00Z" (fractional seconds and "+00:00" taken too); nullopt when
// it is not such a time.
std::optional<std::chrono::system_clock::time_point> parse_aws_time(
    const std::string& text);

}  // namespace seedloader::remote
