// What the credential providers share: reading a token file, asking an endpoint
// for credentials (through the module's HttpClient), the JSON answer of the
// container and metadata endpoints, AWS's times, and where plain http may carry a
// credential. Every token read here is given to register_secret()
// (seedloader/error.h) before anything can echo it. Stateless; safe across threads.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "remote/credential_provider.h"
#include "remote/http_client.h"

namespace seedloader::remote {

// `s` without leading and trailing blanks (space, tab, CR, LF).
std::string trim_blank(const std::string& s);

// The token in the file at `path`, trimmed and registered as a secret. Throws
// ConfigError "WHAT PATH: cannot be read" or "WHAT PATH is empty".
std::string read_token_file(const std::string& path, const std::string& what);

// A credential endpoint's answer: its status and body (at most 1 MiB, which no
// credential answer exceeds), or curl's error when no answer came (status 0).
struct CredentialReply {
  long status = 0;
  std::string body;
  std::string error;
  // "HTTP 403", or curl's error.
  std::string text() const;
};
CredentialReply ask(const HttpClient& http, const HttpRequest& request);

// Credentials from the JSON of a container endpoint or the metadata service
// (AccessKeyId, SecretAccessKey, Token, Expiration). Throws ConfigError naming
// `source` when they are missing or Expiration is not a time.
AwsCredentials credentials_from_json(const std::string& body, const std::string& source);

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
