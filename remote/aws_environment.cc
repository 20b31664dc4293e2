#include "remote/aws_environment.h"

#include <cctype>
#include <cstdlib>

namespace seedloader::remote {

std::optional<std::string> process_variable(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

std::string AwsEnvironment::get(std::string_view name) const {
  return variables(name).value_or("");
}

bool AwsEnvironment::flag(std::string_view name) const {
  std::string v = get(name);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1";
}

}  // namespace seedloader::remote
