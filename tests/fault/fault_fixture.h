// Shared scaffolding for the fault tests: each test runs under a hard deadline
// (SIGALRM kills a hung test), and afterwards checks that no child process is
// left and that the number of open descriptors is back where it started.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace seedloader::testing_util {

inline int count_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// Field 4 of /proc/<pid>/stat, or -1 (also when the process exits while it is
// read: plain read(2), since libstdc++'s filebuf throws on ESRCH).
inline pid_t parent_of(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  const std::string stat(buf, static_cast<std::size_t>(n));
  auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      if (parent_of(static_cast<pid_t>(pid)) == parent)
        out.push_back(static_cast<pid_t>(pid));
    }
    closedir(d);
  }
  return out;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class FaultTest : public ::testing::Test {
 protected:
  static constexpr unsigned kDeadlineSeconds = 20;

  void SetUp() override {
    fds_ = count_fds();
    alarm(kDeadlineSeconds);  // default action: the hung test dies, visibly
  }
  void TearDown() override {
    alarm(0);
    // Give the kernel a moment to finish tearing down killed children.
    std::vector<pid_t> left;
    for (int i = 0; i < 100; ++i) {
      left = children_of(getpid());
      if (left.empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(left.empty()) << left.size() << " child process(es) left, first pid "
                              << left.front();
    EXPECT_EQ(count_fds(), fds_) << "descriptors leaked";
  }

 private:
  int fds_ = 0;
};

}  // namespace seedloader::testing_util
