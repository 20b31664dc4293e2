#include "remote/s3_config.h"

#include <cstdlib>
#include <fstream>

#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Fills the keys of [profile] in the INI file at `path`. False when the file or
// the profile is absent.
bool read_profile(const std::string& path, const std::string& profile, S3Config& out) {
  std::ifstream in(path);
  if (!in) return false;
  bool in_profile = false, found = false;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      in_profile = trim(line.substr(1, line.size() - 2)) == profile;
      found = found || in_profile;
      continue;
    }
    const std::size_t eq = line.find('=');
    if (!in_profile || eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") out.access_key = value;
    if (key == "aws_secret_access_key") out.secret_key = value;
    if (key == "aws_session_token") out.session_token = value;
  }
  return found;
}

std::string percent_encode(const std::string& key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

S3Config S3Config::from_environment() {
  S3Config c;
  if (const std::string r = env("AWS_REGION"); !r.empty()) {
    c.region = r;
  } else if (const std::string d = env("AWS_DEFAULT_REGION"); !d.empty()) {
    c.region = d;
  }
  c.endpoint = env("AWS_ENDPOINT_URL_S3");
  if (c.endpoint.empty()) c.endpoint = env("AWS_ENDPOINT_URL");
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();

  c.access_key = env("AWS_ACCESS_KEY_ID");
  if (!c.access_key.empty()) {
    c.secret_key = env("AWS_SECRET_ACCESS_KEY");
    c.session_token = env("AWS_SESSION_TOKEN");
    if (c.secret_key.empty())
      throw ConfigError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    return c;
  }
  std::string file = env("AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty() && !env("HOME").empty()) file = env("HOME") + "/.aws/credentials";
  const std::string named = env("AWS_PROFILE");
  const std::string profile = named.empty() ? "default" : named;
  const bool found = !file.empty() && read_profile(file, profile, c);
  if (!found && !named.empty())
    throw ConfigError("AWS_PROFILE=" + named + ": no such profile in " +
                      (file.empty() ? std::string("~/.aws/credentials") : file));
  if (found && (c.access_key.empty() || c.secret_key.empty()))
    throw ConfigError("profile " + profile + " in " + file +
                      " lacks aws_access_key_id or aws_secret_access_key");
  return c;
}

std::string S3Config::http_url(const ObjectUrl& object) const {
  const std::string key = percent_encode(object.path);
  // A bucket name with a dot does not match AWS's wildcard certificate as a host
  // name: such buckets are asked path-style.
  if (!endpoint.empty()) return endpoint + "/" + object.host + "/" + key;
  if (object.host.find('.') != std::string::npos)
    return "https://s3." + region + ".amazonaws.com/" + object.host + "/" + key;
  return "https://" + object.host + ".s3." + region + ".amazonaws.com/" + key;
}

}  // namespace seedloader::remote
