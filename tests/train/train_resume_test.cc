// Exact resume: a run stopped after k steps and resumed from its checkpoint ends
// with the same bits as a run that never stopped.
#include <gtest/gtest.h>

#include "tests/train/train_fixture.h"

namespace seedloader::train_test {
namespace {

class TrainResume : public TrainFixture {
 protected:
  // Trains `steps` in one go and as k + rest; true when the weights agree bit for bit.
  bool resumes_exactly(const std::string& args, std::uint64_t k, std::uint64_t steps,
                       int ranks, const std::string& resume_args = "") {
    auto full = train(args + " --steps " + std::to_string(steps) + " --save " +
                          path("full.safetensors"),
                      ranks);
    EXPECT_EQ(full.exit_code, 0) << full.out;
    auto first = train(
        args + " --steps " + std::to_string(k) + " --save " + path("part.safetensors"),
        ranks);
    EXPECT_EQ(first.exit_code, 0) << first.out;
    auto rest =
        train(args + resume_args + " --steps " + std::to_string(steps) + " --resume " +
                  path("part.safetensors") + " --save " + path("resumed.safetensors"),
              ranks);
    EXPECT_EQ(rest.exit_code, 0) << rest.out;
    return same_bits(path("full.safetensors"), path("resumed.safetensors")) &&
           same_bits(path("full.safetensors.optim"), path("resumed.safetensors.optim"));
  }
};

// Random crops and flips from worker streams, shuffled order, momentum: the stop
// falls mid-epoch (6 batches an epoch), so the resumed run must replay the loader.
TEST_F(TrainResume, StoppedMidEpochAndResumedIsBitIdentical) {
  EXPECT_TRUE(resumes_exactly(
      "--data synthetic:48 --transform crop:32:4,hflip --model cnn:small --batch-size 8 "
      "--workers 2 --seed 11 --momentum 0.9",
      4, 9, 0));
}

TEST_F(TrainResume, SampleSeedingResumesExactlyWithAnotherWorkerCount) {
  EXPECT_TRUE(resumes_exactly(
      "--data synthetic:48 --transform crop:32:4,hflip --model cnn:small --batch-size 8 "
      "--seeding sample --seed 12 --optimizer adamw --lr 0.001",
      5, 8, 0, " --workers 1") /* saved with the default 2 workers */);
}

TEST_F(TrainResume, TwoRanksResumeBitIdentical) {
  EXPECT_TRUE(resumes_exactly(
      "--data synthetic:64 --transform crop:32:4,hflip --model cnn:small --batch-size 8 "
      "--workers 1 --seed 13 --momentum 0.9",
      3, 6, 2));
}

// 40 samples, 8 a batch: step 5 ends epoch 0, so the checkpoint points at the
// start of epoch 1 (AdamW: the bias correction must continue from step 5).
TEST_F(TrainResume, ResumesFromAnEpochBoundary) {
  EXPECT_TRUE(resumes_exactly(
      "--data synthetic:40 --model mlp:3072,16,10 --batch-size 8 --workers 1 --seed 14 "
      "--optimizer adamw --lr 0.001",
      5, 8, 0));
}

// Writing checkpoints along the way changes nothing about the training.
TEST_F(TrainResume, CheckpointingEveryFewStepsLeavesTrainingUnchanged) {
  const std::string args =
      "--data synthetic:40 --model mlp:3072,16,10 --batch-size 8 --workers 1 --seed 14 "
      "--momentum 0.5 --steps 7 ";
  auto plain = train(args + "--save " + path("plain.safetensors"));
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  auto periodic =
      train(args + "--checkpoint-every 3 --save " + path("every.safetensors"));
  ASSERT_EQ(periodic.exit_code, 0) << periodic.out;
  EXPECT_TRUE(same_bits(path("plain.safetensors"), path("every.safetensors")));
  EXPECT_TRUE(
      same_bits(path("plain.safetensors.optim"), path("every.safetensors.optim")));
  SafetensorsFile f(path("every.safetensors"));
  EXPECT_EQ(f.metadata().at("global_step"), "7");
  EXPECT_EQ(f.metadata().at("epoch"), "1");
  EXPECT_EQ(f.metadata().at("epoch_samples"), "16");
}

}  // namespace
}  // namespace seedloader::train_test
