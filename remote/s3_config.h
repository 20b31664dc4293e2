// Where S3 requests go and how they are signed, from the variables and files the
// AWS CLI reads, so a job configured for it needs nothing more:
//   credentials: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN),
//     else the profile AWS_PROFILE (default "default") of the credentials file
//     AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials); none at all means
//     unsigned requests (a public bucket);
//   region: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1;
//   endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (an S3-compatible store:
//     MinIO, Ceph, R2; path-style requests), else AWS's regional endpoint
//     (virtual-hosted requests).
// Requests are signed with AWS Signature Version 4 by libcurl. The secret and the
// session token are never part of a message.
#pragma once

#include <string>

#include "remote/object_url.h"

namespace seedloader::remote {

struct S3Config {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  std::string region = "us-east-1";
  std::string endpoint;  // "scheme://host[:port]" without a trailing '/'; empty: AWS

  // Reads the environment and, for a profile, the credentials file. Throws
  // ConfigError naming the file and profile when AWS_PROFILE names a profile the
  // file lacks, or the profile lacks a key.
  static S3Config from_environment();

  bool signed_requests() const { return !access_key.empty(); }
  // The http(s) URL of the object s3://bucket/key: path-style on a configured
  // endpoint, virtual-hosted on AWS (path-style for a bucket name with a dot). Key bytes
  // outside [A-Za-z0-9-._~/] are percent-encoded.
  std::string http_url(const ObjectUrl& object) const;
};

}  // namespace seedloader::remote
