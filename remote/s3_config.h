// Where S3 requests go and how they are signed, from the variables and files the
// AWS CLI reads (through an AwsEnvironment), so a job configured for it needs
// nothing more:
//   credentials: found as the AWS CLI finds them (CredentialChain::standard(),
//     aws_credentials.h: the environment, web identity, a profile, container
//     credentials, the instance metadata service); none found is a ConfigError
//     listing where it looked.
//     Unsigned requests (a public bucket) only with AWS_NO_SIGN_REQUEST=true or
//     when the caller asks for them;
//   region: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1;
//   endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (an S3-compatible store:
//     MinIO, Ceph, R2; path-style requests), else AWS's regional endpoint
//     (virtual-hosted requests).
// Requests are signed with AWS Signature Version 4 by libcurl. The secret and the
// session token are never part of a message. A value, read once; S3ConfigCache
// reads it again when its credentials fall due.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "remote/aws_environment.h"
#include "remote/http_client.h"
#include "remote/object_url.h"

namespace seedloader::remote {

struct S3Config {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  std::string region = "us-east-1";
  std::string endpoint;  // "scheme://host[:port]" without a trailing '/'; empty: AWS
  std::string credential_source;  // where the credentials came from; empty: unsigned
  // When temporary credentials expire (unset: they do not), and when they were
  // found.
  std::optional<std::chrono::system_clock::time_point> expiration;
  std::chrono::system_clock::time_point found_at;

  // Reads `env` and finds credentials unless `anonymous` (or
  // AWS_NO_SIGN_REQUEST=true), their requests sent through `http`; found_at is
  // env's time. Throws ConfigError naming the source and what is wrong, or
  // listing the places looked when there are no credentials.
  static S3Config from_environment(const AwsEnvironment& env, const HttpClient& http,
                                   bool anonymous);

  bool signed_requests() const { return !access_key.empty(); }
  // Temporary credentials are found again from five minutes before they expire
  // (from half their lifetime, for shorter ones); until they expire, a failure to
  // find them again leaves them in use.
  bool refresh_due(std::chrono::system_clock::time_point now) const {
    if (!expiration) return false;
    const auto margin = std::min<std::chrono::system_clock::duration>(
        std::chrono::minutes(5), (*expiration - found_at) / 2);
    return now >= *expiration - margin;
  }
  bool expired(std::chrono::system_clock::time_point now) const {
    return expiration && now >= *expiration;
  }
  // The http(s) URL of the object s3://bucket/key: path-style on a configured
  // endpoint, virtual-hosted on AWS (path-style for a bucket name with a dot). Key bytes
  // outside [A-Za-z0-9-._~/] are percent-encoded.
  std::string http_url(const ObjectUrl& object) const;
};

}  // namespace seedloader::remote
