#include "remote/aws_credentials.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

using Clock = std::chrono::system_clock;

std::string trim_blank(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string home_file(const char* variable, const char* under_home) {
  std::string file = aws_variable(variable);
  if (file.empty() && !aws_variable("HOME").empty())
    file = aws_variable("HOME") + under_home;
  return file;
}

// The keys of section `section` of the INI file at `path`; nullopt when the file
// or the section is absent.
std::optional<std::map<std::string, std::string>> read_section(
    const std::string& path, const std::string& section) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::optional<std::map<std::string, std::string>> out;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    line = trim_blank(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = trim_blank(line.substr(1, line.size() - 2)) == section;
      if (inside && !out) out.emplace();
      continue;
    }
    const std::size_t eq = line.find('=');
    if (inside && eq != std::string::npos)
      (*out)[trim_blank(line.substr(0, eq))] = trim_blank(line.substr(eq + 1));
  }
  return out;
}

struct CredentialReply {
  long status = 0;
  std::string body;
  std::string error;  // curl's, when no answer came
};

std::size_t append_body(char* data, std::size_t, std::size_t n, void* user) {
  auto& body = *static_cast<std::string*>(user);
  if (body.size() + n > (1u << 20)) return 0;  // no credential answer is that long
  body.append(data, n);
  return n;
}

// One HTTP request (PUT with an empty body, or GET), no redirects followed.
CredentialReply http(const std::string& method, const std::string& url,
                     const std::vector<std::string>& headers, double timeout_s,
                     bool no_proxy, const std::string& body = "") {
  std::unique_ptr<CURL, void (*)(CURL*)> c(curl_easy_init(), &curl_easy_cleanup);
  if (!c) throw std::bad_alloc();
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> list(nullptr, &curl_slist_free_all);
  for (const std::string& h : headers) {
    curl_slist* next = curl_slist_append(list.get(), h.c_str());
    if (!next) throw std::bad_alloc();
    list.release();
    list.reset(next);
  }
  CredentialReply r;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c.get(), CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(c.get(), CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, &append_body);
  curl_easy_setopt(c.get(), CURLOPT_WRITEDATA, &r.body);
  if (no_proxy) curl_easy_setopt(c.get(), CURLOPT_NOPROXY, "*");
  if (method == "POST") {
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  if (method == "PUT") {
    curl_easy_setopt(c.get(), CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c.get(), CURLOPT_INFILESIZE, 0L);
  }
  const CURLcode code = curl_easy_perform(c.get());
  if (code != CURLE_OK) {
    r.error = error[0] ? error : curl_easy_strerror(code);
    return r;
  }
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &r.status);
  return r;
}

std::string reply_text(const CredentialReply& r) {
  return r.error.empty() ? "HTTP " + std::to_string(r.status) : r.error;
}

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

// Credentials from the JSON of a container endpoint or the metadata service.
AwsCredentials from_json(const std::string& body, const std::string& source) {
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

std::optional<AwsCredentials> from_web_identity(const std::string& region,
                                                std::vector<std::string>& looked) {
  const std::string token_file = aws_variable("AWS_WEB_IDENTITY_TOKEN_FILE");
  const std::string role = aws_variable("AWS_ROLE_ARN");
  if (token_file.empty() || role.empty()) {
    looked.push_back("web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN unset)");
    return std::nullopt;
  }
  const std::string token = read_token_file(token_file, "AWS_WEB_IDENTITY_TOKEN_FILE");
  // Not AWS_ENDPOINT_URL: here it names the S3-compatible store, which must not
  // receive the pod's identity token.
  std::string endpoint = aws_variable("AWS_ENDPOINT_URL_STS");
  if (endpoint.empty()) endpoint = "https://sts." + region + ".amazonaws.com";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!plain_http_allowed(endpoint, false))
    throw ConfigError("AWS_ENDPOINT_URL_STS=" + endpoint +
                      ": the identity token goes only over https (or http to a "
                      "loopback address)");
  std::string session = aws_variable("AWS_ROLE_SESSION_NAME");
  if (session.empty()) session = "seedloader-" + std::to_string(::time(nullptr));
  // In the body, not the URL: a URL's query reaches proxies' and servers' logs.
  // A server may echo the form as it was sent.
  register_secret(url_escape(token));
  const std::string form =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + url_escape(role) +
      "&RoleSessionName=" + url_escape(session) +
      "&WebIdentityToken=" + url_escape(token);
  const std::string source =
      "web identity (role " + role + " through STS at " + endpoint + ")";
  const CredentialReply r = http("POST", endpoint + "/", {}, 10, false, form);
  if (r.status != 200) {
    // Redacted before they are cut: an echo of the token cut short would no
    // longer be the token.
    const std::string code = redact_credentials(xml_text(r.body, "Code")),
                      message = redact_credentials(xml_text(r.body, "Message"));
    throw ConfigError(source + ": " + reply_text(r) +
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
  return c;
}

std::optional<AwsCredentials> from_profile(std::vector<std::string>& looked) {
  const std::string named = aws_variable("AWS_PROFILE");
  const std::string profile = named.empty() ? "default" : named;
  const std::string credentials =
      home_file("AWS_SHARED_CREDENTIALS_FILE", "/.aws/credentials");
  const std::string config = home_file("AWS_CONFIG_FILE", "/.aws/config");
  const std::string files = (credentials.empty() ? "~/.aws/credentials" : credentials) +
                            " or " + (config.empty() ? "~/.aws/config" : config);
  std::optional<std::map<std::string, std::string>> keys, settings;
  if (!credentials.empty()) keys = read_section(credentials, profile);
  if (!config.empty()) {
    settings = read_section(config, "profile " + profile);
    if (!settings && profile == "default") settings = read_section(config, "default");
  }
  if (!keys && !settings) {
    if (!named.empty())
      throw ConfigError("AWS_PROFILE=" + named + ": no such profile in " + files);
    looked.push_back("profile " + profile + " (not in " + files + ")");
    return std::nullopt;
  }
  for (const auto* section : {&keys, &settings}) {
    if (!*section) continue;
    for (const char* unsupported :
         {"role_arn", "credential_process", "sso_session", "sso_start_url"}) {
      if ((*section)->count(unsupported))
        throw ConfigError("profile " + profile + " uses " + unsupported +
                          ", which seedloader does not support: give the credentials it "
                          "yields in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
                          "AWS_SESSION_TOKEN, or a profile with aws_access_key_id");
    }
  }
  // The credentials file's keys, else the config file's.
  std::string where = credentials;
  std::map<std::string, std::string> found =
      keys ? *keys : std::map<std::string, std::string>{};
  if (!found.count("aws_access_key_id") && settings &&
      settings->count("aws_access_key_id")) {
    found = *settings;
    where = config;
  }
  if (!found.count("aws_access_key_id")) {
    // A profile that sets a region or the like: the chain goes on, as the CLI's.
    looked.push_back("profile " + profile + " (in " + files +
                     ", without aws_access_key_id)");
    return std::nullopt;
  }
  AwsCredentials c;
  c.access_key = found["aws_access_key_id"];
  c.secret_key = found["aws_secret_access_key"];
  c.session_token = found["aws_session_token"];
  if (c.access_key.empty() || c.secret_key.empty())
    throw ConfigError("profile " + profile + " in " + where +
                      " lacks aws_access_key_id or aws_secret_access_key");
  c.source = "profile " + profile + " in " + where;
  return c;
}

}  // namespace

std::string aws_variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool aws_flag(const char* name) {
  std::string v = aws_variable(name);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1";
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

namespace {

std::optional<AwsCredentials> from_container(std::vector<std::string>& looked) {
  const std::string relative = aws_variable("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  std::string url = aws_variable("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!relative.empty()) url = "http://169.254.170.2" + relative;
  if (url.empty()) {
    looked.push_back(
        "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI "
        "unset)");
    return std::nullopt;
  }
  const std::string variable = relative.empty()
                                   ? "AWS_CONTAINER_CREDENTIALS_FULL_URI"
                                   : "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
  const std::string source = "container credentials at " + url + " (" + variable + ")";
  if (!plain_http_allowed(url, true))
    throw ConfigError(variable + "=" + url +
                      ": plain http only to a loopback address literal or the ECS and "
                      "EKS credential addresses; use https");
  std::vector<std::string> headers;
  const std::string token_file = aws_variable("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  std::string token = aws_variable("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (!token_file.empty())
    token = read_token_file(token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  register_secret(token);
  if (token.find_first_of("\r\n") != std::string::npos)
    throw ConfigError("the container authorization token holds a line break");
  if (!token.empty()) headers.push_back("Authorization: " + token);
  const CredentialReply r = http("GET", url, headers, 5, true);
  if (r.status != 200) throw ConfigError(source + ": " + reply_text(r));
  return from_json(r.body, source);
}

std::optional<AwsCredentials> from_instance(std::vector<std::string>& looked) {
  if (aws_flag("AWS_EC2_METADATA_DISABLED")) {
    looked.push_back("the instance metadata service (AWS_EC2_METADATA_DISABLED=true)");
    return std::nullopt;
  }
  std::string endpoint = aws_variable("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  const bool chosen = !endpoint.empty();  // unreachable then is an error, not "not EC2"
  if (endpoint.empty()) endpoint = "http://169.254.169.254";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const auto number = [](const char* name, double fallback, double low, double high) {
    const std::string text = aws_variable(name);
    if (text.empty()) return fallback;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !(v >= low && v <= high)) {
      char range[64];
      std::snprintf(range, sizeof range, "%g to %g", low, high);
      throw ConfigError(std::string(name) + "=" + text + ": not a number from " + range);
    }
    return v;
  };
  const double timeout = number("AWS_METADATA_SERVICE_TIMEOUT", 1, 0.1, 3600);
  const int attempts =
      static_cast<int>(number("AWS_METADATA_SERVICE_NUM_ATTEMPTS", 1, 1, 100));
  const std::string source = "the instance metadata service at " + endpoint;
  CredentialReply token;
  for (int a = 0; a < attempts; ++a) {
    token = http("PUT", endpoint + "/latest/api/token",
                 {"X-aws-ec2-metadata-token-ttl-seconds: 21600"}, timeout, true);
    if (token.error.empty() && token.status < 500) break;
  }
  if (!token.error.empty() && chosen)
    throw ConfigError(source + " (AWS_EC2_METADATA_SERVICE_ENDPOINT): " + token.error);
  // No metadata service (not on EC2), or another cloud's at the same address: the
  // chain ends there, as the CLI's.
  if (!token.error.empty() || token.status == 403 || token.status == 404 ||
      token.status == 405) {
    looked.push_back(source + " (" + reply_text(token) + ")");
    return std::nullopt;
  }
  if (token.status != 200)
    throw ConfigError(source + ": session token: " + reply_text(token));
  register_secret(trim_blank(token.body));
  const std::string header = "X-aws-ec2-metadata-token: " + trim_blank(token.body);
  const std::string base = endpoint + "/latest/meta-data/iam/security-credentials/";
  const CredentialReply roles = http("GET", base, {header}, timeout, true);
  if (roles.status == 404) {
    looked.push_back(source + " (the instance has no IAM role)");
    return std::nullopt;
  }
  if (roles.status != 200)
    throw ConfigError(source + ": its IAM role: " + reply_text(roles));
  const std::string role = trim_blank(roles.body.substr(0, roles.body.find('\n')));
  if (role.empty() || role.find_first_of("/?#") != std::string::npos)
    throw ConfigError(source + ": its IAM role's name is not one path segment");
  const CredentialReply r = http("GET", base + role, {header}, timeout, true);
  if (r.status != 200)
    throw ConfigError(source + ": role " + role + ": " + reply_text(r));
  return from_json(r.body, source + " (role " + role + ")");
}

}  // namespace

std::optional<Clock::time_point> parse_aws_time(const std::string& text) {
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
  return Clock::from_time_t(t);
}

namespace {

std::optional<AwsCredentials> from_environment(std::vector<std::string>& looked) {
  const std::string key = aws_variable("AWS_ACCESS_KEY_ID");
  if (key.empty()) {
    looked.push_back("the environment (AWS_ACCESS_KEY_ID unset)");
    return std::nullopt;
  }
  AwsCredentials c;
  c.access_key = key;
  c.secret_key = aws_variable("AWS_SECRET_ACCESS_KEY");
  c.session_token = aws_variable("AWS_SESSION_TOKEN");
  c.source = "the environment (AWS_ACCESS_KEY_ID)";
  if (c.secret_key.empty())
    throw ConfigError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  return c;
}

}  // namespace

AwsCredentials find_aws_credentials(const std::string& region) {
  std::vector<std::string> looked;
  std::optional<AwsCredentials> c = from_environment(looked);
  if (!c) c = from_web_identity(region, looked);
  if (!c) c = from_profile(looked);
  if (!c) c = from_container(looked);
  if (!c) c = from_instance(looked);
  if (!c) {
    std::string where;
    for (const std::string& place : looked) where += "\n  " + place;
    throw ConfigError(
        "no AWS credentials for s3:// requests; looked in:" + where +
        "\nfor a public bucket, set AWS_NO_SIGN_REQUEST=true to send unsigned requests");
  }
  // What signs the requests stays out of every message, whoever echoes it.
  for (const std::string* secret : {&c->access_key, &c->secret_key, &c->session_token})
    register_secret(*secret);
  return *std::move(c);
}

}  // namespace seedloader::remote
