// ddp-train's ranks agree before they train: ranks given other data or options,
// or one rank that fails alone, stop every rank with exit 2 and a message naming
// the rank and the difference, before any gradient collective.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/train/train_fixture.h"

namespace seedloader::train_test {
namespace {

class TrainAgree : public TrainFixture {
 protected:
  struct PerRank {
    testing_util::CommandResult run;  // both ranks' output
    std::vector<int> exit_codes;      // each rank's own, -1 if it left none
  };

  // Runs ddp-train on two ranks: both get `common`, rank 0 also `rank0` and rank 1
  // `rank1` (a wrapper script reads OpenMPI's rank variable). mpirun is told not to
  // kill the job when a rank exits non-zero, so each rank must stop by itself, and
  // the script records each rank's exit code.
  PerRank train_per_rank(const std::string& common, const std::string& rank0,
                         const std::string& rank1) {
    const std::string script = path("per_rank.sh");
    std::ofstream(script) << "#!/bin/sh\n"
                          << "if [ \"$OMPI_COMM_WORLD_RANK\" = 0 ]; then extra='" << rank0
                          << "'; else extra='" << rank1 << "'; fi\n"
                          << SEEDLOADER_DDP_TRAIN << " $extra \"$@\"\n"
                          << "rc=$?\n"
                          << "echo $rc > " << path("exit.") << "$OMPI_COMM_WORLD_RANK\n"
                          << "exit $rc\n";
    PerRank r;
    r.run = launch("/bin/sh " + script + " " + common, 2,
                   "--mca orte_abort_on_non_zero_status 0");
    for (int rank : {0, 1}) {
      std::ifstream f(path("exit." + std::to_string(rank)));
      int code = -1;
      f >> code;
      r.exit_codes.push_back(code);
    }
    return r;
  }

  // One whole epoch (the default), so a rank with fewer batches would run out first.
  static constexpr const char* kRun =
      "--model mlp:3072,4,10 --batch-size 8 --workers 0 --seed 3";
};

// How often `needle` occurs in `text`.
int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}

// Before, 256 against 200 samples crashed inside MPI (a rank with fewer batches
// reached the epoch's statistics while its peer sent gradients), and 256 against
// 240 trained as if nothing were wrong.
TEST_F(TrainAgree, DifferentDataSetSizesStopEveryRankNamingBoth) {
  for (int other : {200, 240}) {
    auto r = train_per_rank(kRun, "--data synthetic:256",
                            "--data synthetic:" + std::to_string(other));
    EXPECT_EQ(r.exit_codes, (std::vector<int>{2, 2})) << r.run.out;
    EXPECT_EQ(occurrences(r.run.out, "ranks disagree on the data set size: rank 1 has " +
                                         std::to_string(other) +
                                         " samples, rank 0 has 256 samples"),
              2)
        << r.run.out;
    EXPECT_EQ(r.run.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n"
                                                             << r.run.out;
  }
}

TEST_F(TrainAgree, DifferentOptionsStopEveryRankNamingTheOption) {
  const std::string data = std::string(kRun) + " --data synthetic:64";
  auto r = train_per_rank(data, "--lr 0.5", "--lr 0.25");
  EXPECT_EQ(r.exit_codes, (std::vector<int>{2, 2})) << r.run.out;
  EXPECT_EQ(
      occurrences(r.run.out,
                  "ranks disagree on the option lr: rank 1 has 0.25, rank 0 has 0.5"),
      2)
      << r.run.out;
  r = train_per_rank(data, "--bucket-mb 1", "--bucket-mb 2");
  EXPECT_EQ(r.exit_codes, (std::vector<int>{2, 2})) << r.run.out;
  EXPECT_EQ(occurrences(
                r.run.out,
                "ranks disagree on the option bucket_mb: rank 1 has 2.0, rank 0 has 1.0"),
            2)
      << r.run.out;
  r = train_per_rank(data, "--steps 3", "--steps 4");
  EXPECT_EQ(r.exit_codes, (std::vector<int>{2, 2})) << r.run.out;
  EXPECT_EQ(occurrences(r.run.out,
                        "ranks disagree on the total steps: rank 1 has 4, rank 0 has 3"),
            2)
      << r.run.out;
}

// Rank 0's weights are broadcast before --init loads a file on every rank: files
// with other weights used to leave the replicas apart for the whole run.
TEST_F(TrainAgree, DifferentInitWeightsStopEveryRank) {
  const std::string data = write_regression_data(48), init = write_init();
  const std::string other = path("other_init.safetensors");
  std::vector<float> w0(100, 0.1f), b0(10, 0.0f), w2(50, -0.1f), b2(5, 0.0f);
  std::vector<SafetensorsWrite> w{{"0.weight", "F32", {10, 10}, bytes(w0)},
                                  {"0.bias", "F32", {10}, bytes(b0)},
                                  {"2.weight", "F32", {5, 10}, bytes(w2)},
                                  {"2.bias", "F32", {5}, bytes(b2)}};
  write_safetensors(other, w);
  const std::string run = "--data tensors:" + data +
                          " --model mlp:10,10,5 --loss mse --batch-size 4 --workers 0 "
                          "--seed 1 --steps 2";
  auto r = train_per_rank(run, "--init " + init, "--init " + other);
  EXPECT_EQ(r.exit_codes, (std::vector<int>{2, 2})) << r.run.out;
  EXPECT_EQ(
      occurrences(r.run.out, "ranks disagree on the model weights (XXH64): rank 1 has "),
      2)
      << r.run.out;
  // The same weights under another file name are the same run.
  std::filesystem::copy_file(init, path("copy.safetensors"));
  r = train_per_rank(run, "--init " + init, "--init " + path("copy.safetensors"));
  EXPECT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.run.out;
}

// Same data and options on both ranks: the check lets the run through.
TEST_F(TrainAgree, RanksThatAgreeTrain) {
  auto r = train_per_rank(std::string(kRun) + " --data synthetic:64", "", "");
  EXPECT_EQ(r.exit_codes, (std::vector<int>{0, 0})) << r.run.out;
  EXPECT_NE(r.run.out.find("epoch 0:"), std::string::npos) << r.run.out;
}

// A rank that cannot open its data stops the other at once, with its reason,
// instead of leaving it in a collective until the 60 s communication timeout.
TEST_F(TrainAgree, OneRankFailingAloneStopsBothQuickly) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = train_per_rank(kRun, "--data synthetic:64", "--data nosuch:1");
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_codes, (std::vector<int>{2, 2})) << r.run.out;
  EXPECT_EQ(occurrences(r.run.out, "ddp-train: --data nosuch:1: unknown kind 'nosuch'"),
            1)
      << r.run.out;
  EXPECT_EQ(
      occurrences(r.run.out,
                  "ddp-train: rank 1 stopped: --data nosuch:1: unknown kind 'nosuch'"),
      1)
      << r.run.out;
  EXPECT_LT(s, 30.0) << r.run.out;
}

}  // namespace
}  // namespace seedloader::train_test
