// Forked workers reading a 10^7-entry dataset index must share the parent's
// pages: their proportional set size stays a fraction of the index, and their
// private memory (what copy-on-write would have copied) stays tiny.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "loader/datasets/path_index.h"
#include "loader/datasets/process_memory.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kEntries = 10'000'000;

PathIndex make_index() {
  PathIndex index;
  index.reserve(kEntries, kEntries * 20);
  char path[64];
  for (std::uint64_t i = 0; i < kEntries; ++i) {
    const int n = std::snprintf(path, sizeof path, "c%03llu/%09llu.jpg",
                                static_cast<unsigned long long>(i % 1000),
                                static_cast<unsigned long long>(i));
    index.add(std::string_view(path, static_cast<std::size_t>(n)),
              static_cast<std::int32_t>(i % 1000));
  }
  return index;
}

// Touches every entry (as an epoch of get() calls would) and returns a checksum.
std::uint64_t read_all(const PathIndex& index) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < index.size(); ++i) {
    sum += index.path_view(i).size() + index.path(i)[5] + index.label(i);
  }
  return sum;
}

struct Worker {
  pid_t pid = -1;
  int result_fd = -1;   // the worker writes its checksum here
  int release_fd = -1;  // closing it lets the worker exit
};

Worker fork_reader(const PathIndex& index) {
  int result[2], release[2];
  EXPECT_EQ(::pipe(result), 0);
  EXPECT_EQ(::pipe(release), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(120);  // never outlive a stuck test
    ::close(result[0]);
    ::close(release[1]);
    const std::uint64_t sum = read_all(index);
    if (::write(result[1], &sum, sizeof sum) != sizeof sum) ::_exit(2);
    char byte;
    while (::read(release[0], &byte, 1) > 0) {
    }
    ::_exit(0);
  }
  ::close(result[1]);
  ::close(release[0]);
  return {pid, result[0], release[1]};
}

TEST(IndexMemoryTest, ForkedWorkersShareTheIndexInsteadOfCopyingIt) {
  const PathIndex index = make_index();
  const std::uint64_t index_bytes = index.bytes();
  const std::uint64_t expected = read_all(index);
  Worker workers[2] = {fork_reader(index), fork_reader(index)};
  for (Worker& w : workers) {
    pollfd p{w.result_fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 60'000), 1)
        << "worker " << w.pid << " did not finish in 60 s";
    std::uint64_t sum = 0;
    ASSERT_EQ(::read(w.result_fd, &sum, sizeof sum), static_cast<ssize_t>(sizeof sum));
    EXPECT_EQ(sum, expected);
  }
  // Both workers have touched every page of the index and are still alive.
  for (Worker& w : workers) {
    const ProcessMemory m = read_process_memory(w.pid);
    std::printf("index %.1f MB; worker %d: PSS %.1f MB, private %.1f MB\n",
                index_bytes / 1e6, static_cast<int>(w.pid), m.pss_bytes / 1e6,
                m.private_bytes / 1e6);
    EXPECT_LT(m.private_bytes, index_bytes / 20) << "copy-on-write copied the index";
    EXPECT_LT(m.pss_bytes, index_bytes / 2)
        << "the worker does not share the index pages";
  }
  // A worker forked later holds the earlier one's pipe ends too: release all
  // before reaping any.
  for (Worker& w : workers) {
    ::close(w.release_fd);
    ::close(w.result_fd);
  }
  for (Worker& w : workers) {
    int status = 0;
    ASSERT_EQ(::waitpid(w.pid, &status, 0), w.pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

}  // namespace
}  // namespace seedloader
