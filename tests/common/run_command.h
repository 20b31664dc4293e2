// Test helper: run a shell command, capture its standard output and exit code.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace seedloader::testing_util {

struct CommandResult {
  int exit_code = -1;  // -1 when the command did not exit normally
  std::string out;
};

inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) {
    result.out.append(buf.data(), n);
  }
  int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

inline bool python_has(const std::string& module) {
  return run_command("/usr/bin/python3 -c 'import " + module + "; print(1)' 2>/dev/null")
             .out == "1\n";
}

}  // namespace seedloader::testing_util
