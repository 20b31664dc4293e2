#include <fstream>
#include <map>

#include "remote/credential_io.h"
#include "remote/credential_providers.h"
#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

using Section = std::map<std::string, std::string>;

// `variable`'s file, else HOME + `under_home`; "" without either.
std::string home_file(const AwsEnvironment& env, const char* variable,
                      const char* under_home) {
  std::string file = env.get(variable);
  if (file.empty() && !env.get("HOME").empty()) file = env.get("HOME") + under_home;
  return file;
}

// The keys of section `section` of the INI file at `path`; nullopt when the file
// or the section is absent.
std::optional<Section> read_section(const std::string& path, const std::string& section) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::optional<Section> out;
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

}  // namespace

CredentialLookup ProfileCredentials::resolve(const CredentialContext& context) const {
  const AwsEnvironment& env = context.env;
  const std::string named = env.get("AWS_PROFILE");
  const std::string profile = named.empty() ? "default" : named;
  const std::string credentials =
      home_file(env, "AWS_SHARED_CREDENTIALS_FILE", "/.aws/credentials");
  const std::string config = home_file(env, "AWS_CONFIG_FILE", "/.aws/config");
  const std::string files = (credentials.empty() ? "~/.aws/credentials" : credentials) +
                            " or " + (config.empty() ? "~/.aws/config" : config);
  std::optional<Section> keys, settings;
  if (!credentials.empty()) keys = read_section(credentials, profile);
  if (!config.empty()) {
    settings = read_section(config, "profile " + profile);
    if (!settings && profile == "default") settings = read_section(config, "default");
  }
  if (!keys && !settings) {
    if (!named.empty())
      throw ConfigError("AWS_PROFILE=" + named + ": no such profile in " + files);
    return {std::nullopt, "profile " + profile + " (not in " + files + ")"};
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
  Section found = keys ? *keys : Section{};
  if (!found.count("aws_access_key_id") && settings &&
      settings->count("aws_access_key_id")) {
    found = *settings;
    where = config;
  }
  if (!found.count("aws_access_key_id")) {
    // A profile that sets a region or the like: the chain goes on, as the CLI's.
    return {std::nullopt,
            "profile " + profile + " (in " + files + ", without aws_access_key_id)"};
  }
  AwsCredentials c;
  c.access_key = found["aws_access_key_id"];
  c.secret_key = found["aws_secret_access_key"];
  c.session_token = found["aws_session_token"];
  if (c.access_key.empty() || c.secret_key.empty())
    throw ConfigError("profile " + profile + " in " + where +
                      " lacks aws_access_key_id or aws_secret_access_key");
  c.source = "profile " + profile + " in " + where;
  return {std::move(c), ""};
}

}  // namespace seedloader::remote
