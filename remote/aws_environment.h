// AwsEnvironment: what the AWS settings are read from — the variables (AWS_REGION,
// AWS_PROFILE, AWS_ROLE_ARN, HOME, ...) and the time that temporary credentials'
// expiry is judged by. Both are functions, so a test gives variables and moves
// time without touching the process's environment or sleeping; the default reads
// the process's environment at each read (getenv, as the AWS CLI does) and the
// system clock (credentials' expirations are wall-clock times).
// A value type; copies share the functions, which must be callable from any
// thread (the defaults are, while nothing calls setenv).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace seedloader::remote {

// The process environment's value of `name`; nullopt when unset.
std::optional<std::string> process_variable(std::string_view name);

struct AwsEnvironment {
  using Variables = std::function<std::optional<std::string>(std::string_view name)>;
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  Variables variables = process_variable;
  Clock clock = [] { return std::chrono::system_clock::now(); };

  // The variable's value; "" when unset (set to "" counts as unset, as in the CLI).
  std::string get(std::string_view name) const;
  // Whether the variable says "true" or "1", in any case.
  bool flag(std::string_view name) const;
  std::chrono::system_clock::time_point now() const { return clock(); }
};

}  // namespace seedloader::remote
