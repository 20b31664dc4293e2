// ProcessAws: the process's AWS variables for one test's scope, for the tests
// whose code reads the process's environment (a TarShards and its forked
// workers; code that takes an AwsEnvironment is given a FakeAws instead): every
// variable the credential chain and S3Config read is cleared, HOME is `home` and
// the metadata service is disabled unless the test sets them, and all are
// restored when it goes. Not thread-safe, as setenv is not: change variables only
// while no other thread of the process reads them.
#pragma once

#include <stdlib.h>

#include <map>
#include <string>

namespace seedloader::testing_util {

class ProcessAws {
 public:
  explicit ProcessAws(const std::string& home) {
    for (const char* name : kVariables) {
      if (const char* v = ::getenv(name)) saved_[name] = v;
      unset(name);
    }
    set("HOME", home);
    set("AWS_EC2_METADATA_DISABLED", "true");
  }
  ~ProcessAws() {
    for (const char* name : kVariables) {
      const auto it = saved_.find(name);
      if (it == saved_.end())
        unset(name);
      else
        set(name, it->second);
    }
  }
  ProcessAws(const ProcessAws&) = delete;
  ProcessAws& operator=(const ProcessAws&) = delete;

  void set(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) { ::unsetenv(name.c_str()); }

 private:
  static constexpr const char* kVariables[] = {"AWS_ACCESS_KEY_ID",
                                               "AWS_SECRET_ACCESS_KEY",
                                               "AWS_SESSION_TOKEN",
                                               "AWS_WEB_IDENTITY_TOKEN_FILE",
                                               "AWS_ROLE_ARN",
                                               "AWS_ROLE_SESSION_NAME",
                                               "AWS_ENDPOINT_URL_STS",
                                               "AWS_PROFILE",
                                               "AWS_SHARED_CREDENTIALS_FILE",
                                               "AWS_CONFIG_FILE",
                                               "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                               "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                               "AWS_EC2_METADATA_DISABLED",
                                               "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                               "AWS_METADATA_SERVICE_TIMEOUT",
                                               "AWS_METADATA_SERVICE_NUM_ATTEMPTS",
                                               "AWS_NO_SIGN_REQUEST",
                                               "AWS_ENDPOINT_URL",
                                               "AWS_ENDPOINT_URL_S3",
                                               "AWS_REGION",
                                               "AWS_DEFAULT_REGION",
                                               "HOME"};
  std::map<std::string, std::string> saved_;
};

}  // namespace seedloader::testing_util
