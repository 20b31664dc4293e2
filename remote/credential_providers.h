// The places the AWS CLI finds credentials in, one CredentialProvider each, in the
// order CredentialChain::standard() tries them (aws_credentials.h). Each reads
// its variables through the context's AwsEnvironment and sends its requests
// through the context's HttpClient; none keeps state between calls.
#pragma once

#include "remote/credential_provider.h"

namespace seedloader::remote {

// 1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN). A key
// without its secret is an error.
class EnvironmentCredentials final : public CredentialProvider {
 public:
  CredentialLookup resolve(const CredentialContext& context) const override;
};

// 2. Web identity (EKS pods): AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (+
// AWS_ROLE_SESSION_NAME, else "seedloader-" and the time), exchanged with STS
// AssumeRoleWithWebIdentity (the token in a POST body, never in the URL) at
// AWS_ENDPOINT_URL_STS (https, or http to a loopback address), else
// sts.REGION.amazonaws.com; AWS_ENDPOINT_URL, the S3 store's here, never receives
// the token. STS's refusal is redacted before it is cut.
class WebIdentityCredentials final : public CredentialProvider {
 public:
  CredentialLookup resolve(const CredentialContext& context) const override;
};

// 3. The profile AWS_PROFILE (default "default") of the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), else of the config
// file (AWS_CONFIG_FILE, default ~/.aws/config, as "[profile NAME]"). A profile
// that assumes a role (role_arn), runs a credential_process or uses SSO is not
// supported and says so; one without aws_access_key_id (a region only) is passed
// over, as the CLI does; a named profile found in neither file is an error.
class ProfileCredentials final : public CredentialProvider {
 public:
  CredentialLookup resolve(const CredentialContext& context) const override;
};

// 4. Container credentials (ECS, EKS Pod Identity):
// AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on 169.254.170.2) or
// AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a loopback address literal
// or the ECS and EKS agents' addresses), with the token of
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or AWS_CONTAINER_AUTHORIZATION_TOKEN.
class ContainerCredentials final : public CredentialProvider {
 public:
  CredentialLookup resolve(const CredentialContext& context) const override;
};

// 5. The instance metadata service, IMDSv2 (a session token first, then the
// role's credentials), at AWS_EC2_METADATA_SERVICE_ENDPOINT (default
// http://169.254.169.254, where no answer, or a 403/404/405 to the token request,
// means not on EC2; a named endpoint that does not answer is an error), within
// AWS_METADATA_SERVICE_TIMEOUT seconds (default 1) a request, the token asked up
// to AWS_METADATA_SERVICE_NUM_ATTEMPTS times (default 1) while no answer or a 5xx
// comes; skipped when AWS_EC2_METADATA_DISABLED=true.
class InstanceMetadataCredentials final : public CredentialProvider {
 public:
  CredentialLookup resolve(const CredentialContext& context) const override;
};

}  // namespace seedloader::remote
