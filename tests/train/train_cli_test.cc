// ddp-train end to end: usage and exit codes, agreement with PyTorch, and the
// tutorial modes (DataParallel, model parallel) against plain DDP.
#include <gtest/gtest.h>

#include <regex>

#include "tests/train/train_fixture.h"

namespace seedloader::train_test {
namespace {

using testing_util::python_has;
using testing_util::run_command;

class TrainCli : public TrainFixture {
 protected:
  // ddp-train and PyTorch from the same data and weights; returns the difference.
  double torch_difference(int ranks) {
    std::string data = write_regression_data(48), init = write_init();
    std::string out = path("ours.safetensors");
    auto r =
        train("--data tensors:" + data +
                  " --model mlp:10,10,5 --loss mse --lr 0.001 "
                  "--batch-size 4 --steps 20 --no-shuffle --workers 1 --seed 1 --init " +
                  init + " --save " + out,
              ranks);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    auto py = run_command("/usr/bin/python3 " SEEDLOADER_TORCH_REF " " + data + " " +
                          init + " " + out + " " +
                          std::to_string(4 * std::max(ranks, 1)) + " 20 0.001 2>&1");
    EXPECT_EQ(py.exit_code, 0) << py.out;
    std::smatch m;
    std::regex re("max_abs_diff (\\S+)");
    EXPECT_TRUE(std::regex_search(py.out, m, re)) << py.out;
    std::printf("ddp-train (%d rank(s)) vs PyTorch, 20 steps: %s", std::max(ranks, 1),
                py.out.c_str());
    return m.empty() ? 1.0 : std::stod(m[1]);
  }
};

TEST_F(TrainCli, HelpExitsZeroAndNamesTheOptions) {
  auto r = train("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--data", "--model", "--resume", "--checkpoint-every", "--mode"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

TEST_F(TrainCli, UsageErrorsExitTwo) {
  EXPECT_EQ(train("--data synthetic:10 --no-such-option").exit_code, 2);
  auto r = train("--data nosuch:1 --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown kind 'nosuch'"), std::string::npos) << r.out;
  r = train("--data synthetic:16 --mode dp --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--devices"), std::string::npos) << r.out;
}

TEST_F(TrainCli, MatchesPyTorchWithOneRank) {
  if (!python_has("torch")) GTEST_SKIP() << "torch is not importable by /usr/bin/python3";
  EXPECT_LT(torch_difference(0), 1e-6);
}

TEST_F(TrainCli, MatchesPyTorchWithTwoRanksAndBatchTwiceAsLarge) {
  if (!python_has("torch")) GTEST_SKIP() << "torch is not importable by /usr/bin/python3";
  EXPECT_LT(torch_difference(2), 1e-6);
}

TEST_F(TrainCli, DataParallelMatchesSingleDevice) {
  const std::string common =
      "--data synthetic:48 --model cnn:small --batch-size 12 --steps 3 --workers 0 "
      "--seed 5 --momentum 0.9 --save ";
  auto one = train(common + path("one.safetensors"));
  ASSERT_EQ(one.exit_code, 0) << one.out;
  auto dp = train(common + path("dp.safetensors") + " --mode dp --devices 0,1,2");
  ASSERT_EQ(dp.exit_code, 0) << dp.out;
  // The same sums in another order: equal up to float rounding.
  EXPECT_LT(max_diff(path("one.safetensors"), path("dp.safetensors")), 1e-6);
}

TEST_F(TrainCli, ModelParallelEqualsTheUnsplitModelBitForBit) {
  const std::string common =
      "--data synthetic:32 --model cnn:small --batch-size 8 --steps 3 --workers 0 "
      "--seed 5 --optimizer adamw --lr 0.001 --save ";
  auto whole = train(common + path("whole.safetensors"));
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  auto split = train(common + path("split.safetensors") + " --mode ddp-mp --split 4");
  ASSERT_EQ(split.exit_code, 0) << split.out;
  EXPECT_TRUE(same_bits(path("whole.safetensors"), path("split.safetensors")));
}

}  // namespace
}  // namespace seedloader::train_test
