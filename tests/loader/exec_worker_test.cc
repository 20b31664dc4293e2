// Workers started as new programs (LoaderOptions::worker_command, Python's
// "spawn") or handed over from another loader (release_workers, adopt_workers):
// the same batches, streams and slots as forked workers, kept batches included,
// and a worker program that cannot serve is a WorkerError naming it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/error.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kSize = 61;

struct Kept {
  std::vector<std::uint64_t> indices;
  std::vector<std::uint64_t> fingerprints;
  std::vector<float> values;
  int worker = 0;
  bool operator==(const Kept&) const = default;
};

LoaderOptions options(std::uint64_t batch, bool sample_seeding, bool persistent) {
  LoaderOptions o;
  o.batch_size = batch;
  o.num_workers = 2;
  o.prefetch = 2;
  o.shuffle = true;
  o.seed = 1234;
  o.seeding = sample_seeding ? SeedScope::kSample : SeedScope::kWorker;
  o.persistent_workers = persistent;
  return o;
}

// exec_worker's command for a loader built with `options(batch, ...)`.
std::vector<std::string> command(std::uint64_t batch, bool sample_seeding,
                                 bool persistent) {
  return {SL_EXEC_WORKER,
          std::to_string(kSize),
          std::to_string(batch),
          "2",
          sample_seeding ? "1" : "0",
          persistent ? "1" : "0"};
}

// Two epochs, every batch of the second kept until the epoch ends (the ring
// moves kept slots aside), copied out after.
std::vector<Kept> two_epochs(DataLoader& loader) {
  std::vector<Kept> out;
  for (std::uint64_t epoch : {0, 1}) {
    loader.set_epoch(epoch);
    std::vector<Batch> held;
    for (auto it = loader.begin(); !(it == loader.end()); ++it) held.push_back(it.take());
    for (const Batch& b : held) {
      auto v = b.tensor("value").values<float>();
      out.push_back({{b.indices().begin(), b.indices().end()},
                     {b.fingerprints().begin(), b.fingerprints().end()},
                     {v.begin(), v.end()},
                     b.worker()});
    }
  }
  return out;
}

TEST(ExecWorkerTest, ProgramsServeTheBatchesForkedWorkersServe) {
  const StreamProbeDataset dataset(kSize, 3);
  for (bool sample : {false, true}) {
    for (bool persistent : {false, true}) {
      SCOPED_TRACE(std::to_string(sample) + " " + std::to_string(persistent));
      DataLoader forked(dataset, options(5, sample, persistent));
      const std::vector<Kept> expected = two_epochs(forked);
      LoaderOptions o = options(5, sample, persistent);
      o.worker_command = command(5, sample, persistent);
      DataLoader started(dataset, o);
      const std::vector<Kept> got = two_epochs(started);
      ASSERT_EQ(got.size(), 2 * 13u);
      EXPECT_EQ(got, expected);
      EXPECT_EQ(got[1].worker, 1);  // both programs served
    }
  }
}

// The hand-over's channel in the test: the launch arguments as one line on a
// pipe; the worker reopens the shared memory's files through the parent's
// descriptor table (Python passes them over a socket instead).
WorkerLaunch receive_launch(int fd) {
  std::string line;
  char c = 0;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  std::vector<std::string> args(1);
  for (char ch : line) {
    if (ch == ' ') {
      args.emplace_back();
    } else {
      args.back() += ch;
    }
  }
  WorkerLaunch launch = WorkerLaunch::parse(args);
  const auto reopen = [](int parents) {
    const std::string path =
        "/proc/" + std::to_string(getppid()) + "/fd/" + std::to_string(parents);
    return open(path.c_str(), O_RDWR);
  };
  launch.region_fd = reopen(launch.region_fd);
  if (launch.spares_fd >= 0) launch.spares_fd = reopen(launch.spares_fd);
  return launch;
}

TEST(ExecWorkerTest, HandedOverWorkersServeTheLoaderThatAdoptsThem) {
  const StreamProbeDataset dataset(kSize, 3);
  for (bool sample : {false, true}) {
    SCOPED_TRACE(sample);
    DataLoader forked(dataset, options(5, sample, false));
    const std::vector<Kept> expected = two_epochs(forked);
    int pipes[2][2];
    for (auto& p : pipes) ASSERT_EQ(pipe(p), 0);
    LoaderOptions first = options(5, sample, false);
    first.worker_handoff = [&](int w) {
      const WorkerLaunch launch = receive_launch(pipes[w][0]);
      DataLoader served(dataset, options(5, sample, false));
      served.serve_worker(launch);
    };
    DataLoader releasing(dataset, first);
    std::vector<pid_t> pids;
    {
      auto it = releasing.begin();  // both workers run, one batch delivered
      ASSERT_FALSE(it == releasing.end());
      pids = releasing.release_workers();
    }
    ASSERT_EQ(pids.size(), 2u);
    EXPECT_TRUE(releasing.worker_pids().empty());
    LoaderOptions o = options(5, sample, false);
    o.timeout = std::chrono::seconds(30);  // a worker that never came is a TimeoutError
    o.adopt_workers = pids;
    std::vector<int> told;
    o.worker_adopt = [&](int w, const WorkerLaunch& launch, const std::vector<int>& fds) {
      EXPECT_EQ(launch.worker, w);
      std::string line;
      for (const std::string& a : launch.arguments()) line += a + ' ';
      line.back() = '\n';
      ASSERT_EQ(write(pipes[w][1], line.data(), line.size()),
                static_cast<ssize_t>(line.size()));
      EXPECT_FALSE(fds.empty());
      told.push_back(w);
    };
    DataLoader adopting(dataset, o);
    adopting.set_epoch(0);
    {
      auto it = adopting.begin();
      EXPECT_EQ(adopting.worker_pids(), pids);  // the released processes serve it
    }
    const std::vector<Kept> got = two_epochs(adopting);  // epoch 1: forked afresh
    EXPECT_EQ(told, (std::vector<int>{0, 1}));
    EXPECT_EQ(got, expected);
    for (auto& p : pipes) {
      close(p[0]);
      close(p[1]);
    }
  }
}

// Processes given to adopt belong to the loader from its construction: one that
// never starts its workers kills and reaps them when it goes.
TEST(ExecWorkerTest, WorkersToAdoptGoWithALoaderThatNeverStarted) {
  const StreamProbeDataset dataset(kSize, 3);
  std::vector<pid_t> pids;
  for (int w = 0; w < 2; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      pause();  // a released worker waiting to be told what to serve
      _exit(0);
    }
    pids.push_back(pid);
  }
  {
    LoaderOptions o = options(5, false, false);
    o.adopt_workers = pids;
    o.worker_adopt = [](int, const WorkerLaunch&, const std::vector<int>&) {};
    DataLoader never_started(dataset, o);
  }
  for (pid_t pid : pids) {
    errno = 0;
    EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1) << "pid " << pid << " was not reaped";
    EXPECT_EQ(errno, ECHILD);
  }
}

// The WorkerError an epoch of `loader` ends in ("" when none).
std::string worker_error(DataLoader& loader) {
  try {
    for (const Batch& b : loader) (void)b;
  } catch (const WorkerError& e) {
    return e.what();
  }
  return "";
}

TEST(ExecWorkerTest, AProgramBuiltOtherwiseOrMissingIsAWorkerError) {
  const StreamProbeDataset dataset(kSize, 3);
  LoaderOptions o = options(5, false, false);
  o.worker_command = command(6, false, false);  // another batch size: another layout
  DataLoader other(dataset, o);
  const std::string refused = worker_error(other);
  EXPECT_NE(refused.find("exited with code 1"), std::string::npos) << refused;
  o.worker_command = {"/nonexistent/seedloader-worker"};
  DataLoader missing(dataset, o);
  const std::string absent = worker_error(missing);
  EXPECT_NE(absent.find("exited with code 127"), std::string::npos) << absent;
}

TEST(ExecWorkerTest, LaunchArgumentsRoundTripAndBadOnesAreNamed) {
  WorkerLaunch l;
  l.worker = 3;
  l.parent = 4242;
  l.first_task = 17;
  l.start_epoch = 9;
  l.region_fd = 7;
  l.region_bytes = 1 << 20;
  const WorkerLaunch back = WorkerLaunch::parse(l.arguments());
  EXPECT_EQ(back.arguments(), l.arguments());
  std::vector<std::string> bad = l.arguments();
  bad[2] = "12x";
  try {
    WorkerLaunch::parse(bad);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("first_task"), std::string::npos) << e.what();
  }
  EXPECT_THROW(WorkerLaunch::parse({"1", "2"}), ConfigError);
}

}  // namespace
}  // namespace seedloader
