// Fault 9: with /dev/shm limited to 64 MB (a tmpfs mounted over it in a private
// mount namespace), a loader with 1 GB of slots still works, because its
// shared memory is anonymous and never touches /dev/shm. Skipped, with the
// reason, where mount namespaces are not permitted.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "seedloader/data_loader.h"
#include "tests/fault/fault_fixture.h"

namespace seedloader {
namespace {

using testing_util::FaultTest;

constexpr int kSkipCode = 77;
constexpr std::int64_t kBlob = 16 << 20;  // bytes per sample

// 16 MB samples, touched only at both ends so the test stays cheap.
class BlobDataset : public Dataset {
 public:
  std::uint64_t size() const override { return 64; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng&, SampleWriter& out) const override {
    auto blob = out.field<std::uint8_t>(0);
    blob.front() = static_cast<std::uint8_t>(index);
    blob.back() = static_cast<std::uint8_t>(index + 1);
  }
  std::string describe() const override { return "BlobDataset"; }

 private:
  SampleLayout layout_{{{"blob", DType::kU8, {kBlob}, false}}};
};

// Runs in the child: a private mount namespace with a 64 MB /dev/shm.
std::string limit_dev_shm() {
  if (unshare(CLONE_NEWNS) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    return std::string("skip: unshare(CLONE_NEWNS) not permitted here: ") +
           std::strerror(errno);
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64m") != 0) {
    return std::string("skip: cannot mount a tmpfs over /dev/shm: ") +
           std::strerror(errno);
  }
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) != 0 || fs.f_blocks * fs.f_frsize > (64u << 20)) {
    return "fail: /dev/shm is not limited to 64 MB after mounting";
  }
  return "";
}

std::string load_a_gigabyte() {
  BlobDataset ds;
  LoaderOptions o;
  o.batch_size = 16;  // 256 MB per slot
  o.num_workers = 2;
  o.prefetch = 2;  // 4 slots: 1 GB
  o.seed = 5;
  DataLoader loader(ds, o);
  if (loader.shared_memory().size() < (1ull << 30)) return "fail: slots under 1 GB";
  std::uint64_t samples = 0;
  for (const Batch& b : loader) {
    TensorView t = b.tensor("blob");
    for (std::uint64_t i = 0; i < b.size(); ++i) {
      const std::uint64_t index = b.indices()[i];
      const std::byte* row = t.data + i * kBlob;
      if (row[0] != std::byte(index & 0xff) ||
          row[kBlob - 1] != std::byte((index + 1) & 0xff)) {
        return "fail: sample " + std::to_string(index) + " arrived corrupted";
      }
      ++samples;
    }
  }
  return samples == 64 ? "" : "fail: " + std::to_string(samples) + " samples of 64";
}

TEST_F(FaultTest, GigabyteOfSlotsWorksWithDevShmLimitedTo64MB) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    std::string msg = limit_dev_shm();
    int code = msg.rfind("skip", 0) == 0 ? kSkipCode : 1;
    if (msg.empty()) {
      try {
        msg = load_a_gigabyte();
      } catch (const std::exception& e) {
        msg = std::string("fail: ") + e.what();
      }
      code = msg.empty() ? 0 : 1;
    }
    if (write(fds[1], msg.data(), msg.size()) < 0) code = 1;
    _exit(code);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  pollfd p{fds[0], POLLIN, 0};
  while (poll(&p, 1, 15000) == 1) {
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    msg.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died: " << msg;
  if (WEXITSTATUS(status) == kSkipCode) GTEST_SKIP() << msg;
  EXPECT_EQ(WEXITSTATUS(status), 0) << msg;
}

}  // namespace
}  // namespace seedloader
