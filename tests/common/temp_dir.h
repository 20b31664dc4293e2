// Test helpers for scratch files: TempDir, a fresh directory removed at scope exit,
// and process_temp_dir(), one such directory for the whole test process. Tests
// name their files inside these rather than in testing::TempDir() (a shared /tmp/),
// so concurrent runs of the suite, from one tree or several, never meet.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace seedloader::testing_util {

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "sl_test_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// This process's scratch directory, with a trailing '/', removed at exit.
inline const std::string& process_temp_dir() {
  static const TempDir dir;
  static const std::string path = dir.path() + "/";
  return path;
}

}  // namespace seedloader::testing_util
