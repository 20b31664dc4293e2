// seed-audit run and seedloader-bench against hostile input: a worker stopped
// with SIGSTOP ends the run with a TimeoutError naming it (--timeout), and a FIFO
// named like an image is a data error instead of a run that waits forever.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader {
namespace {

using testing_util::run_command;

struct Stalled {
  int exit_code = -1;   // the tool's
  std::string stopped;  // pid of the worker that was stopped
  std::string out;      // the tool's stdout and stderr
};

// Starts `command` (a tool forking workers), stops its first worker with
// SIGSTOP as soon as it exists, and waits for the tool to end.
Stalled run_and_stop_a_worker(const std::string& command) {
  const std::string script =
      command +
      " 2>&1 &\n"
      "p=$!; c=\n"
      "for i in $(seq 400); do c=$(pgrep -P $p | head -n 1); [ -n \"$c\" ] && break; "
      "sleep 0.05; done\n"
      "[ -n \"$c\" ] && kill -STOP $c\n"
      "wait $p; rc=$?\n"
      "echo \"@@ stopped=$c rc=$rc\"\n";
  const auto r = run_command(script);
  Stalled s;
  s.out = r.out;
  const std::size_t at = r.out.rfind("@@ stopped=");
  if (at == std::string::npos) return s;
  const std::size_t rc = r.out.find(" rc=", at);
  s.stopped = r.out.substr(at + 11, rc - at - 11);
  s.exit_code = std::stoi(r.out.substr(rc + 4));
  return s;
}

void expect_timeout_naming(const Stalled& s) {
  EXPECT_EQ(s.exit_code, 2) << s.out;
  ASSERT_FALSE(s.stopped.empty()) << s.out;
  EXPECT_NE(s.out.find("did not deliver batch"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("(pid " + s.stopped + ")"), std::string::npos) << s.out;
}

TEST(HostileInputCliTest, SeedAuditRunEndsWhenAWorkerIsStopped) {
  const Stalled s = run_and_stop_a_worker(
      std::string(SEEDLOADER_SEED_AUDIT) +
      " run --data synthetic:1000000 --transform \"\" --batch-size 8 --workers 2 "
      "--epochs 1 --seed 1 --persistent-workers --timeout 1");
  expect_timeout_naming(s);
}

TEST(HostileInputCliTest, BenchEndsWhenAWorkerIsStopped) {
  const Stalled s = run_and_stop_a_worker(
      std::string(SEEDLOADER_BENCH) +
      " --data synthetic:1000000 --batch-size 8 --workers 2 --batches 1000000 "
      "--timeout 1");
  expect_timeout_naming(s);
}

TEST(HostileInputCliTest, TimeoutIsDocumentedWithItsDefault) {
  for (const std::string& tool :
       {std::string(SEEDLOADER_SEED_AUDIT) + " run", std::string(SEEDLOADER_BENCH)}) {
    const auto r = run_command(tool + " --help 2>&1");
    EXPECT_NE(r.out.find("--timeout"), std::string::npos) << tool << "\n" << r.out;
    EXPECT_NE(r.out.find("120"), std::string::npos) << tool << "\n" << r.out;
  }
}

TEST(HostileInputCliTest, FifoNamedLikeAnImageIsAnInputErrorNotAHang) {
  testing_util::TempDir dir;
  std::filesystem::create_directories(dir / "c");
  ASSERT_EQ(::mkfifo((dir / "c/x.jpg").c_str(), 0644), 0);
  // KILL after 30 s: before the fix the run waited for a writer forever.
  const auto r = run_command("timeout -s KILL 30 " + std::string(SEEDLOADER_SEED_AUDIT) +
                             " run --data imagefolder:" + dir.path() +
                             " --workers 2 --epochs 1 --seed 1 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(dir / "c/x.jpg"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FIFO"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace seedloader
