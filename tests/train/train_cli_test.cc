// ddp-train end to end: usage and exit codes, launcher variables that disagree
// with MPI, agreement with PyTorch, and the tutorial modes (DataParallel, model
// parallel) against plain DDP.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/common/cross_check.h"
#include "tests/train/train_fixture.h"

namespace seedloader::train_test {
namespace {

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

// Output destinations are checked before anything trains: exit 2, the option named.
TEST_F(TrainCli, UnwritableOutputsFailBeforeTraining) {
  const std::string common =
      "--data synthetic:16 --model mlp:3072,4,10 --batch-size 8 --workers 0 --steps 2 ";
  std::filesystem::create_directory(path("adir"));
  for (const std::string& bad :
       {"--save " + path("adir"), "--save " + path("nodir/x.safetensors"),
        "--log-json " + path("adir"), "--log-json " + path("nodir/log.jsonl")}) {
    auto r = train(common + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.out;
    EXPECT_NE(r.out.find(bad.substr(0, bad.find(' '))), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n" << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(path("adir.tmp")));
}

// Numbers a user types are checked at parse time. Before, --lr inf and --momentum
// nan trained into NaN weights, --bucket-mb nan was undefined behaviour (a NaN
// cast to a byte count) and --seed -1 or --seed 18446744073709551616 both became
// 2^64 - 1.
TEST_F(TrainCli, NonFiniteOrOutOfRangeNumbersExitTwoNamingTheOption) {
  const std::string run =
      "--data synthetic:16 --model cnn:small --batch-size 8 --workers 0 ";
  const std::pair<const char*, const char*> cases[] = {
      {"--lr", "--steps 1 --lr inf"},
      {"--lr", "--steps 1 --lr nan"},
      {"--lr", "--steps 1 --lr 1e39"},  // finite as a double, inf as a float
      {"--momentum", "--steps 1 --momentum nan"},
      {"--momentum", "--steps 1 --momentum 1.5"},
      {"--weight-decay", "--steps 1 --weight-decay nan"},
      {"--bucket-mb", "--steps 1 --bucket-mb nan"},
      {"--bucket-mb", "--steps 1 --bucket-mb 1e300"},
      {"--seed", "--steps 1 --seed -1"},
      {"--seed", "--steps 1 --seed 18446744073709551616"},
      {"--steps", "--steps 18446744073709551617"},
      {"--epochs", "--epochs -1"},
      {"--timeout", "--steps 1 --timeout -1"},
      {"--checkpoint-every", "--steps 1 --checkpoint-every -1"},
      {"--batch-size", "--steps 1 --batch-size 18446744073709551616"},
  };
  for (const auto& [option, args] : cases) {
    auto r = train(run + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(option), std::string::npos) << args << "\n" << r.out;
  }
  // The ends of the ranges still train.
  EXPECT_EQ(train(run + "--steps 1 --lr 0 --momentum 1 --weight-decay 0 "
                        "--seed 18446744073709551615")
                .exit_code,
            0);
}

// Labels are checked against the model's classes before the loss sees them, and an
// int64 label is never truncated to int32. Before, 2^32 + 1 trained as label 1 and
// a label >= classes failed (CPU) as "row R" of the batch, or (GPU) became NaN.
TEST_F(TrainCli, LabelsOutsideTheModelsClassesAreADataErrorNamingTheSample) {
  auto classification = [&](std::int64_t bad, std::uint64_t row) {
    const std::uint64_t n = 8;
    std::vector<float> x(n * 10, 0.5f);
    std::vector<std::int64_t> y = {0, 1, 2, 3, 4, 0, 1, 2};
    y[row] = bad;
    std::string p = path("labels.safetensors");
    std::vector<SafetensorsWrite> w{{"x", "F32", {n, 10}, bytes(x)},
                                    {"y", "I64", {n}, bytes(y)}};
    write_safetensors(p, w);
    return p;
  };
  const std::string run =
      " --model mlp:10,5 --loss xent --batch-size 4 --steps 2 --no-shuffle --workers 0";
  auto r =
      train("--data tensors:" + classification((std::int64_t{1} << 32) + 1, 5) + run);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("sample 5: label 4294967297"), std::string::npos) << r.out;
  r = train("--data tensors:" + classification(5, 3) + run);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("sample 3: label 5 is outside the model's classes [0, 5)"),
            std::string::npos)
      << r.out;
  r = train("--data tensors:" + classification(-1, 6) + run);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("sample 6: label -1"), std::string::npos) << r.out;
  EXPECT_EQ(train("--data tensors:" + classification(4, 6) + run).exit_code, 0);
}

// One training step without mpirun, as a launcher with `env` variables would run it.
const char* const kOneStep = SEEDLOADER_DDP_TRAIN
    " --data synthetic:16 --model mlp:3072,4,10 --batch-size 8 --workers 0 --steps 1";

// torchrun --nproc-per-node 2 ddp-train starts two MPI singletons: each would
// train alone on everything and write the same --save.
TEST_F(TrainCli, TorchrunVariablesThatDisagreeWithMpiExitTwoWithTheHint) {
  auto r = launch(std::string("env WORLD_SIZE=2 RANK=0 ") + kOneStep, 0);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("WORLD_SIZE=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mpirun -np 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n" << r.out;
  r = launch(std::string("env WORLD_SIZE=1 RANK=0 ") + kOneStep, 0);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// srun -n 2 without PMIx: two singletons again. A batch script of a 4-task
// allocation that runs ddp-train as one process is not such a launch.
TEST_F(TrainCli, SrunStepWithoutPmixExitsTwoButABatchScriptRuns) {
  auto r = launch(
      std::string("env SLURM_STEP_NUM_TASKS=2 SLURM_NTASKS=2 SLURM_PROCID=1 ") + kOneStep,
      0);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("srun -n 2 --mpi=pmix"), std::string::npos) << r.out;
  r = launch(std::string("env SLURM_NTASKS=4 SLURM_PROCID=0 ") + kOneStep, 0);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST_F(TrainCli, MatchesPyTorchWithOneRank) {
  SL_REQUIRE_PYTHON_MODULE("torch");
  EXPECT_LT(torch_difference(0), 1e-6);
}

TEST_F(TrainCli, MatchesPyTorchWithTwoRanksAndBatchTwiceAsLarge) {
  SL_REQUIRE_PYTHON_MODULE("torch");
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

// The split torch's DataParallel makes (torch.chunk), printed once per batch
// size; the expected sizes are what torch 1.13 prints for
// [len(c) for c in torch.arange(rows).chunk(replicas)].
TEST_F(TrainCli, DataParallelSplitsABatchAsTorchChunkAndSaysSo) {
  struct Case {
    int rows, replicas;
    const char* line;
  } cases[] = {
      {30, 8,
       "a batch of 30 rows as torch.chunk does: 4,4,4,4,4,4,4,2 (8 of 8 replicas)"},
      {9, 4, "a batch of 9 rows as torch.chunk does: 3,3,3 (3 of 4 replicas)"},
      {5, 8, "a batch of 5 rows as torch.chunk does: 1,1,1,1,1 (5 of 8 replicas)"},
  };
  for (const Case& c : cases) {
    std::string devices;
    for (int d = 0; d < c.replicas; ++d) devices += (d ? "," : "") + std::to_string(d);
    auto r = train("--data synthetic:" + std::to_string(2 * c.rows) +
                   " --model mlp:3072,4,10 --batch-size " + std::to_string(c.rows) +
                   " --steps 2 --workers 0 --seed 5 --mode dp --devices " + devices);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::size_t at = r.out.find(c.line);
    EXPECT_NE(at, std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(c.line, at + 1), std::string::npos) << "printed twice\n"
                                                             << r.out;
  }
}

// A state dict saved from a DDP-wrapped model ("module.0.weight", ...) starts a
// run exactly as the plain one does, and the prefix is mentioned once.
TEST_F(TrainCli, InitAcceptsTheStateDictOfAWrappedModel) {
  const std::string data = write_regression_data(16), init = write_init();
  SafetensorsFile plain(init);
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<SafetensorsWrite> w;
  for (const SafetensorsTensor& t : plain.tensors()) bytes.push_back(plain.read(t));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const SafetensorsTensor& t = plain.tensors()[i];
    w.push_back({"module." + t.name, t.dtype, t.shape, bytes[i]});
  }
  write_safetensors(path("wrapped.safetensors"), w);
  const std::string common = "--data tensors:" + data +
                             " --model mlp:10,10,5 --loss mse --batch-size 4 --steps 2 "
                             "--workers 0 --seed 1 --init ";
  auto a = train(common + init + " --save " + path("a.safetensors"));
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out.find("prefix"), std::string::npos) << a.out;
  auto b =
      train(common + path("wrapped.safetensors") + " --save " + path("b.safetensors"));
  ASSERT_EQ(b.exit_code, 0) << b.out;
  EXPECT_NE(b.out.find("parameters carry the 'module.' prefix of a wrapped (DDP or "
                       "DataParallel) model; read without it"),
            std::string::npos)
      << b.out;
  EXPECT_EQ(max_diff(path("a.safetensors"), path("b.safetensors")), 0.0);
}

// torch.save's formats (a zip archive; a pickle before torch 1.6) are named as
// such, not reported as a safetensors header length past the end of the file.
TEST_F(TrainCli, InitFromATorchSaveFileSaysSoAndHowToConvert) {
  const std::string data = write_regression_data(16);
  // The first bytes of each: a zip local header, and a protocol-2 pickle of the
  // legacy format's magic number.
  const std::string zip =
      std::string("PK\x03\x04") + std::string(4, '\0') + "archive/data.pkl";
  const std::string pickle = {'\x80', '\x02', '\x8a', '\x0a', 'l', '\xfc', '\x9c', 'F',
                              '\xf9', ' ',    'j',    '\xa8', 'P', '\x19', '.'};
  const std::pair<const char*, std::string> files[] = {{"zip.pt", zip},
                                                       {"pickle.pt", pickle}};
  for (const auto& [name, content] : files) {
    {
      std::ofstream f(path(name), std::ios::binary);
      f << content;
    }
    auto r = train("--data tensors:" + data +
                   " --model mlp:10,10,5 --loss mse --steps 1 --workers 0 --init " +
                   path(name));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("a PyTorch torch.save file (zip or pickle), not safetensors: "
                         "write the weights with safetensors.torch.save_file"),
              std::string::npos)
        << name << ": " << r.out;
  }
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
