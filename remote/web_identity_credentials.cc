#include <curl/curl.h>

#include <memory>
#include <new>

#include "remote/credential_io.h"
#include "remote/credential_providers.h"
#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

// The text of the first <tag>...</tag> in `xml`, or "".
std::string xml_text(const std::string& xml, const std::string& tag) {
  const std::size_t b = xml.find("<" + tag + ">");
  if (b == std::string::npos) return "";
  const std::size_t from = b + tag.size() + 2;
  const std::size_t e = xml.find("</" + tag + ">", from);
  return e == std::string::npos ? "" : xml.substr(from, e - from);
}

std::string url_escape(const std::string& s) {
  std::unique_ptr<char, void (*)(void*)> out(
      curl_easy_escape(nullptr, s.data(), static_cast<int>(s.size())), &curl_free);
  if (!out) throw std::bad_alloc();
  return out.get();
}

}  // namespace

CredentialLookup WebIdentityCredentials::resolve(const CredentialContext& context) const {
  const AwsEnvironment& env = context.env;
  const std::string token_file = env.get("AWS_WEB_IDENTITY_TOKEN_FILE");
  const std::string role = env.get("AWS_ROLE_ARN");
  if (token_file.empty() || role.empty())
    return {std::nullopt,
            "web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN unset)"};
  const std::string token = read_token_file(token_file, "AWS_WEB_IDENTITY_TOKEN_FILE");
  // Not AWS_ENDPOINT_URL: here it names the S3-compatible store, which must not
  // receive the pod's identity token.
  std::string endpoint = env.get("AWS_ENDPOINT_URL_STS");
  if (endpoint.empty()) endpoint = "https://sts." + context.region + ".amazonaws.com";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!plain_http_allowed(endpoint, false))
    throw ConfigError("AWS_ENDPOINT_URL_STS=" + endpoint +
                      ": the identity token goes only over https (or http to a "
                      "loopback address)");
  std::string session = env.get("AWS_ROLE_SESSION_NAME");
  if (session.empty())
    session =
        "seedloader-" + std::to_string(std::chrono::system_clock::to_time_t(env.now()));
  // In the body, not the URL: a URL's query reaches proxies' and servers' logs.
  // A server may echo the form as it was sent.
  register_secret(url_escape(token));
  HttpRequest request;
  request.method = HttpRequest::Method::kPost;
  request.url = endpoint + "/";
  request.body =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + url_escape(role) +
      "&RoleSessionName=" + url_escape(session) +
      "&WebIdentityToken=" + url_escape(token);
  request.timeout = std::chrono::seconds(10);
  const std::string source =
      "web identity (role " + role + " through STS at " + endpoint + ")";
  const CredentialReply r = ask(context.http, request);
  if (r.status != 200) {
    // Redacted before they are cut: an echo of the token cut short would no
    // longer be the token.
    const std::string code = redact_credentials(xml_text(r.body, "Code")),
                      message = redact_credentials(xml_text(r.body, "Message"));
    throw ConfigError(source + ": " + r.text() +
                      (code.empty() ? "" : " " + code.substr(0, 64)) +
                      (message.empty() ? "" : ": " + message.substr(0, 200)));
  }
  AwsCredentials c;
  c.source = source;
  c.access_key = xml_text(r.body, "AccessKeyId");
  c.secret_key = xml_text(r.body, "SecretAccessKey");
  c.session_token = xml_text(r.body, "SessionToken");
  if (c.access_key.empty() || c.secret_key.empty() || c.session_token.empty())
    throw ConfigError(source +
                      ": the answer holds no AccessKeyId, SecretAccessKey and "
                      "SessionToken");
  const std::string when = xml_text(r.body, "Expiration");
  c.expiration = parse_aws_time(when);
  if (!c.expiration)
    throw ConfigError(source + ": the answer's Expiration is not a time: '" +
                      when.substr(0, 40) + "'");
  return {std::move(c), ""};
}

}  // namespace seedloader::remote
