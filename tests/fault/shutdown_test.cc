// Faults 6 and 7: when the main process is SIGKILLed its workers follow within
// a couple of seconds; when the consumer stops mid-epoch (break, destructor)
// the workers stop and are reaped promptly.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "seedloader/data_loader.h"
#include "tests/fault/fault_fixture.h"
#include "tests/loader/test_datasets.h"

namespace seedloader {
namespace {

using testing_util::FaultTest;
using testing_util::HookedDataset;
using testing_util::seconds_since;

void slow_sample(std::uint64_t) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

LoaderOptions options(bool persistent) {
  LoaderOptions o;
  o.batch_size = 8;
  o.num_workers = 2;
  o.prefetch = 2;
  o.seed = 11;
  o.persistent_workers = persistent;
  return o;
}

TEST_F(FaultTest, WorkersExitWhenTheMainProcessIsKilled) {
  // Orphaned workers are re-parented to us, so we can see them go and reap them.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t trainer = fork();
  ASSERT_GE(trainer, 0);
  if (trainer == 0) {
    close(fds[0]);
    HookedDataset ds(1000, slow_sample);
    DataLoader loader(ds, options(true));
    auto it = loader.begin();
    std::vector<pid_t> pids = loader.worker_pids();
    if (write(fds[1], pids.data(), pids.size() * sizeof(pid_t)) < 0) _exit(1);
    for (;;) pause();
  }
  close(fds[1]);
  pid_t pids[2] = {-1, -1};
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1) << "the trainer never started its workers";
  ASSERT_EQ(read(fds[0], pids, sizeof(pids)), static_cast<ssize_t>(sizeof(pids)));
  close(fds[0]);

  ASSERT_EQ(kill(trainer, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(trainer, &status, 0), trainer);
  auto t0 = std::chrono::steady_clock::now();
  int reaped = 0;
  while (reaped < 2 && seconds_since(t0) < 2.0) {
    for (pid_t& pid : pids) {
      if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        ++reaped;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(reaped, 2) << "workers outlived their parent by 2 s";
  for (pid_t pid : pids) {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// PR_SET_PDEATHSIG follows the forking thread: persistent workers forked by a
// thread that has since exited are gone, and saying so is the loader's job.
TEST_F(FaultTest, PersistentWorkersLostWithTheirForkingThreadAreAConfigError) {
  HookedDataset ds(32, [](std::uint64_t) {});
  DataLoader loader(ds, options(true));
  std::uint64_t first = 0;
  std::thread([&] {
    for (const Batch& b : loader) first += b.size();
  }).join();
  ASSERT_EQ(first, 32u);
  loader.set_epoch(1);
  try {
    for (const Batch& b : loader) (void)b;
    FAIL() << "iterating after the forking thread exited did not throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("persistent_workers"), std::string::npos)
        << e.what();
  }
  // The loader is whole afterwards: this thread forks fresh workers.
  std::uint64_t again = 0;
  for (const Batch& b : loader) again += b.size();
  EXPECT_EQ(again, 32u);
}

class StopMidEpochTest : public FaultTest, public ::testing::WithParamInterface<bool> {};

TEST_P(StopMidEpochTest, BreakStopsWorkersPromptly) {
  HookedDataset ds(2000, slow_sample);
  DataLoader loader(ds, options(GetParam()));
  std::vector<pid_t> pids;
  int seen = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (const Batch& b : loader) {
    (void)b;
    pids = loader.worker_pids();
    if (++seen == 3) {
      t0 = std::chrono::steady_clock::now();
      break;
    }
  }
  EXPECT_LT(seconds_since(t0), 1.0);
  ASSERT_EQ(pids.size(), 2u);
  if (GetParam()) {
    EXPECT_EQ(loader.worker_pids(), pids);  // kept, idle, for the next epoch
  } else {
    EXPECT_TRUE(loader.worker_pids().empty());
    for (pid_t pid : pids) EXPECT_NE(kill(pid, 0), 0) << "worker " << pid << " lives on";
  }
}

TEST_P(StopMidEpochTest, DestroyingTheLoaderMidEpochReapsWorkers) {
  HookedDataset ds(2000, slow_sample);
  std::vector<pid_t> pids;
  auto t0 = std::chrono::steady_clock::now();
  {
    DataLoader loader(ds, options(GetParam()));
    auto it = loader.begin();
    ++it;
    pids = loader.worker_pids();
    t0 = std::chrono::steady_clock::now();
  }
  EXPECT_LT(seconds_since(t0), 1.5);
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) EXPECT_NE(kill(pid, 0), 0) << "worker " << pid << " lives on";
}

INSTANTIATE_TEST_SUITE_P(PersistentOrNot, StopMidEpochTest, ::testing::Bool());

}  // namespace
}  // namespace seedloader
