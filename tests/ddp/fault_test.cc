// End to end under mpirun: a rank that dies or stalls mid-step makes the whole job
// fail with a clear message within a deadline, instead of hanging the others.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/common/run_command.h"

namespace {

using seedloader::testing_util::run_command;

struct JobResult {
  int exit_code;
  std::string out;
  double seconds;
};

// `timeout` is the hard deadline: a hang shows up as its exit code 124.
JobResult run_job(const std::string& mode) {
  const auto start = std::chrono::steady_clock::now();
  auto r = run_command(
      "ASAN_OPTIONS=detect_leaks=0 OMPI_MCA_rmaps_base_oversubscribe=1 "
      "timeout -k 5 45 " SEEDLOADER_MPIEXEC
      " --allow-run-as-root --oversubscribe -np 2 " SEEDLOADER_FAULT_WORKER " " +
      mode + " 2>&1");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {r.exit_code, r.out, seconds};
}

TEST(DdpFaultTest, KilledRankFailsTheJobWithAClearMessage) {
  auto r = run_job("kill");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.exit_code, 124) << "the job hung until the hard deadline:\n" << r.out;
  EXPECT_LT(r.seconds, 40.0);
  EXPECT_NE(r.out.find("rank 1 killing itself"), std::string::npos) << r.out;
  // mpirun's own report names the dead rank and its signal, e.g. "mpirun noticed
  // that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
  EXPECT_NE(r.out.find("process rank 1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("signal 9"), std::string::npos) << r.out;
}

TEST(DdpFaultTest, StalledRankMakesPeersFailWithCommErrorWithinTimeout) {
  auto r = run_job("stall");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.exit_code, 124) << "the job hung until the hard deadline:\n" << r.out;
  EXPECT_LT(r.seconds, 40.0);
  EXPECT_NE(r.out.find("CommError: rank 0 of 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did not complete within 2000 ms"), std::string::npos) << r.out;
}

}  // namespace
