#include "remote/credential_io.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "seedloader/error.h"

namespace seedloader::remote {

std::string trim_blank(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string read_token_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(what + " " + path + ": cannot be read");
  std::stringstream s;
  s << in.rdbuf();
  const std::string token = trim_blank(s.str());
  if (token.empty()) throw ConfigError(what + " " + path + " is empty");
  // A server may echo the token it refuses; no message shows it.
  register_secret(token);
  return token;
}

std::string CredentialReply::text() const {
  return error.empty() ? "HTTP " + std::to_string(status) : error;
}

CredentialReply ask(const HttpClient& http, const HttpRequest& request) {
  CredentialReply r;
  const HttpReply reply = http.send(request, r.body, 1u << 20);
  if (!reply.answered())
    r.error = curl_failure(reply.code, reply.error);
  else
    r.status = reply.status;
  return r;
}

AwsCredentials credentials_from_json(const std::string& body, const std::string& source) {
  AwsCredentials c;
  c.source = source;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
    c.access_key = j.at("AccessKeyId").get<std::string>();
    c.secret_key = j.at("SecretAccessKey").get<std::string>();
    c.session_token = j.value("Token", "");
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(source + " answered without AccessKeyId and SecretAccessKey");
  }
  if (c.access_key.empty() || c.secret_key.empty())
    throw ConfigError(source + " answered with an empty AccessKeyId or SecretAccessKey");
  if (j.contains("Expiration")) {
    const std::string when =
        j["Expiration"].is_string() ? j["Expiration"].get<std::string>() : std::string();
    c.expiration = parse_aws_time(when);
    if (!c.expiration)
      throw ConfigError(source + " answered with an Expiration that is not a time: '" +
                        when.substr(0, 40) + "'");
  }
  return c;
}

bool plain_http_allowed(const std::string& url, bool container_agents) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), &curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    return false;
  char* scheme = nullptr;
  char* host = nullptr;
  curl_url_get(u.get(), CURLUPART_SCHEME, &scheme, 0);
  curl_url_get(u.get(), CURLUPART_HOST, &host, 0);
  const std::string s = scheme ? scheme : "";
  std::string h = host ? host : "";
  curl_free(scheme);
  curl_free(host);
  if (s == "https") return true;
  if (s != "http") return false;
  if (h == "localhost") return true;
  // Address literals only: a name such as 127.0.0.1.example.com resolves anywhere.
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') {
    in6_addr a6{};
    if (::inet_pton(AF_INET6, h.substr(1, h.size() - 2).c_str(), &a6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    in6_addr eks{};
    ::inet_pton(AF_INET6, "fd00:ec2::23", &eks);
    return container_agents && std::memcmp(&a6, &eks, sizeof a6) == 0;
  }
  in_addr a4{};
  if (::inet_pton(AF_INET, h.c_str(), &a4) != 1) return false;
  const std::uint32_t ip = ntohl(a4.s_addr);
  if ((ip >> 24) == 127) return true;
  return container_agents &&
         (ip == 0xA9FEAA02u || ip == 0xA9FEAA17u);  // 169.254.170.2/.23
}

std::optional<std::chrono::system_clock::time_point> parse_aws_time(
    const std::string& text) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6)
    return std::nullopt;
  std::string rest = text.substr(static_cast<std::size_t>(consumed));
  if (!rest.empty() && rest[0] == '.') {
    const std::size_t digits = rest.find_first_not_of("0123456789", 1);
    rest = digits == std::string::npos ? "" : rest.substr(digits);
  }
  if (rest != "Z" && rest != "+00:00" && rest != "z") return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t t = ::timegm(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return std::chrono::system_clock::from_time_t(t);
}

}  // namespace seedloader::remote
