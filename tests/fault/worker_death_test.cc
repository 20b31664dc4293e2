// Faults 1-3 and 8: workers that die (SIGKILL, SIGSEGV, SIGBUS, exit(3)) or
// stall are reported with worker id, pid and cause, within a bounded time.
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

LoaderOptions options(int workers) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = workers;
  o.prefetch = 2;
  o.seed = 7;
  return o;
}

// Restores the default action for `sig` with the raw system call, so that a
// sanitizer's own handler cannot turn the signal into an ordinary exit.
void default_action(int sig) {
  struct {
    void* handler;
    unsigned long flags;
    void* restorer;
    unsigned long mask;
  } action = {reinterpret_cast<void*>(SIG_DFL), 0, nullptr, 0};
  syscall(SYS_rt_sigaction, sig, &action, nullptr, sizeof(action.mask));
}

void crash_with_sigsegv() {
  default_action(SIGSEGV);
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *static_cast<volatile int*>(page) = 1;
}

void crash_with_sigbus() {
  default_action(SIGBUS);
  int fd = memfd_create("shrunk", 0);
  if (ftruncate(fd, 4096) != 0) return;
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ftruncate(fd, 0) != 0) return;
  *static_cast<volatile int*>(page) = 1;  // beyond the end of the file now
}

// Iterates until the loader throws; returns the WorkerError.
template <typename E>
E iterate_until_error(DataLoader& loader) {
  try {
    for (const Batch& b : loader) (void)b;
  } catch (const E& e) {
    return e;
  }
  ADD_FAILURE() << "the epoch finished without an error";
  return E("none", {}, ErrorCode::kWorkerDied);
}

TEST_F(FaultTest, KilledWorkerIsReportedWithItsSignalAndOthersAreReaped) {
  HookedDataset ds(400, [](std::uint64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  DataLoader loader(ds, options(2));
  auto it = loader.begin();
  std::vector<pid_t> pids = loader.worker_pids();
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(kill(pids[1], SIGKILL), 0);
  auto t0 = std::chrono::steady_clock::now();
  try {
    for (; !(it == loader.end()); ++it) {
    }
    FAIL() << "a killed worker went unnoticed";
  } catch (const WorkerError& e) {
    EXPECT_LT(seconds_since(t0), 2.0);
    EXPECT_EQ(e.failure().worker, 1);
    EXPECT_EQ(e.failure().pid, pids[1]);
    EXPECT_EQ(e.failure().signal, SIGKILL);
    EXPECT_NE(std::string(e.what()).find("worker 1 (pid " + std::to_string(pids[1]) +
                                         ") was killed by signal 9 (SIGKILL)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(loader.worker_pids().empty());
  // The next epoch forks fresh workers and completes.
  loader.set_epoch(1);
  std::uint64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, 400u);
}

TEST_F(FaultTest, DeadWorkerIsDetectedEvenWhenSigchldIsIgnored) {
  // With SIGCHLD ignored the kernel reaps children itself; waitpid then
  // reports ECHILD, which must still count as a dead worker.
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &old), 0);
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 9) raise(SIGKILL);
  });
  DataLoader loader(ds, options(2));
  WorkerError e = iterate_until_error<WorkerError>(loader);
  sigaction(SIGCHLD, &old, nullptr);
  EXPECT_EQ(e.failure().worker, 0);
  EXPECT_NE(std::string(e.what()).find("worker 0"), std::string::npos) << e.what();
}

TEST_F(FaultTest, SegfaultInGetNamesTheSignal) {
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 21) crash_with_sigsegv();
  });
  DataLoader loader(ds, options(2));
  WorkerError e = iterate_until_error<WorkerError>(loader);
  EXPECT_EQ(e.failure().signal, SIGSEGV);
  EXPECT_EQ(e.failure().worker, 1);  // batch 5 -> worker 1
  EXPECT_NE(std::string(e.what()).find("SIGSEGV"), std::string::npos) << e.what();
}

TEST_F(FaultTest, BusErrorInGetNamesTheSignal) {
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 8) crash_with_sigbus();
  });
  DataLoader loader(ds, options(3));
  WorkerError e = iterate_until_error<WorkerError>(loader);
  EXPECT_EQ(e.failure().signal, SIGBUS);
  EXPECT_EQ(e.failure().worker, 2);  // batch 2 -> worker 2
  EXPECT_NE(std::string(e.what()).find("SIGBUS"), std::string::npos) << e.what();
}

TEST_F(FaultTest, WorkerCallingExitIsReportedWithItsCode) {
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 4) std::exit(3);
  });
  DataLoader loader(ds, options(2));
  WorkerError e = iterate_until_error<WorkerError>(loader);
  EXPECT_EQ(e.code(), ErrorCode::kWorkerDied);
  EXPECT_FALSE(e.failure().recoverable);
  EXPECT_EQ(e.failure().exit_code, 3);
  EXPECT_EQ(e.failure().worker, 1);
  const std::string expected =
      "worker 1 (pid " + std::to_string(e.failure().pid) + ") exited with code 3";
  EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
}

TEST_F(FaultTest, StalledWorkerIsATimeoutErrorNamingIt) {
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 9) std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  LoaderOptions o = options(2);
  o.timeout = std::chrono::milliseconds(300);
  DataLoader loader(ds, o);
  auto t0 = std::chrono::steady_clock::now();
  try {
    for (const Batch& b : loader) (void)b;
    FAIL() << "a stalled worker went unnoticed";
  } catch (const TimeoutError& e) {
    EXPECT_LT(seconds_since(t0), 3.0);
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut);
    EXPECT_EQ(e.waited(), std::chrono::milliseconds(300));
    EXPECT_NE(std::string(e.what()).find("worker 0 (pid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch 2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(loader.worker_pids().empty());
}

// An interrupt noticed by the waiting hook (as the Python binding's Ctrl-C check
// does) abandons the epoch: the workers are gone and the next epoch runs whole.
TEST_F(FaultTest, WhileWaitingHookThrowingStopsTheWorkersAndTheNextEpochRuns) {
  static bool stall = true;  // workers see the value it had when they were forked
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 9 && stall) std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  LoaderOptions o = options(2);
  int calls = 0;
  o.while_waiting = [&calls] {
    if (++calls == 10) throw std::runtime_error("interrupted");
  };
  DataLoader loader(ds, o);
  auto t0 = std::chrono::steady_clock::now();
  try {
    for (const Batch& b : loader) (void)b;
    FAIL() << "the hook's exception was lost";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "interrupted");
    EXPECT_LT(seconds_since(t0), 3.0);
  }
  EXPECT_TRUE(loader.worker_pids().empty());
  stall = false;
  calls = -1000000;
  std::uint64_t batches = 0;
  for (const Batch& b : loader) batches += b.empty() ? 0 : 1;
  EXPECT_EQ(batches, loader.num_batches());
}

TEST_F(FaultTest, WithoutTimeoutADeadWorkerIsStillDetected) {
  HookedDataset ds(64, [](std::uint64_t i) {
    if (i == 9) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }
  });
  DataLoader loader(ds, options(2));  // timeout 0: wait as long as it takes
  WorkerError e = iterate_until_error<WorkerError>(loader);
  EXPECT_EQ(e.failure().signal, SIGKILL);
  EXPECT_EQ(e.failure().worker, 0);
  EXPECT_EQ(e.failure().batch, 2);
}

}  // namespace
}  // namespace seedloader
