// FakeAws: AWS variables and a clock for the code under test, set and moved by the
// test, in place of the process's environment and the system clock: env() is an
// AwsEnvironment that reads them live, so a change shows at the next read. The
// clock starts at the system clock's now and moves only by advance(). Not
// thread-safe; the AwsEnvironment it hands out refers to it and must not outlive
// it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "remote/aws_environment.h"

namespace seedloader::testing_util {

class FakeAws {
 public:
  FakeAws() = default;
  FakeAws(const FakeAws&) = delete;
  FakeAws& operator=(const FakeAws&) = delete;

  void set(const std::string& name, const std::string& value) {
    variables_[name] = value;
  }
  void unset(const std::string& name) { variables_.erase(name); }
  void advance(std::chrono::system_clock::duration by) { now_ += by; }
  std::chrono::system_clock::time_point now() const { return now_; }

  remote::AwsEnvironment env() const {
    remote::AwsEnvironment e;
    e.variables = [this](std::string_view name) -> std::optional<std::string> {
      const auto it = variables_.find(std::string(name));
      if (it == variables_.end()) return std::nullopt;
      return it->second;
    };
    e.clock = [this] { return now_; };
    return e;
  }

 private:
  std::map<std::string, std::string> variables_;
  std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
};

}  // namespace seedloader::testing_util
