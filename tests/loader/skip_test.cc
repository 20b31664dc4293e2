// Declared skips (LoaderOptions::skip): skipped steps are not delivered and every
// other step is the batch an unskipped run delivers; skipped samples leave their
// batches otherwise unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/error.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

struct Delivered {
  std::uint64_t number;
  int worker;
  std::vector<std::uint64_t> indices;
  std::vector<std::uint64_t> fingerprints;
  std::vector<float> values;
  bool operator==(const Delivered&) const = default;
};

std::vector<Delivered> run(DataLoader& loader, std::uint64_t epoch,
                           std::uint64_t first = 0) {
  loader.resume(epoch, first);
  std::vector<Delivered> out;
  for (const Batch& b : loader) {
    auto v = b.tensor("value").values<float>();
    out.push_back({b.number(),
                   b.worker(),
                   {b.indices().begin(), b.indices().end()},
                   {b.fingerprints().begin(), b.fingerprints().end()},
                   {v.begin(), v.end()}});
  }
  return out;
}

LoaderOptions options(int workers, SeedScope seeding) {
  LoaderOptions o;
  o.batch_size = 5;
  o.num_workers = workers;
  o.shuffle = true;
  o.seed = 21;
  o.seeding = seeding;
  return o;
}

class SkipTest : public ::testing::TestWithParam<std::tuple<int, SeedScope>> {};

TEST_P(SkipTest, SkippedStepsAreNotDeliveredAndEveryOtherStepIsUnchanged) {
  const auto [workers, seeding] = GetParam();
  StreamProbeDataset ds(61, 2);  // 13 steps, the last short
  DataLoader reference(ds, options(workers, seeding));
  LoaderOptions o = options(workers, seeding);
  o.skip.steps = {{1, 2, 4}, {1, 7, 8}, {1, 12, 99}, {3, 0, 1}};
  DataLoader skipping(ds, o);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<Delivered> want = run(reference, epoch);
    if (epoch == 1) {
      std::erase_if(want, [](const Delivered& d) {
        return (d.number >= 2 && d.number < 4) || d.number == 7 || d.number == 12;
      });
    }
    EXPECT_EQ(run(skipping, epoch), want) << "epoch " << epoch;
  }
  // Resumed inside the epoch: the skips after the resume point still hold.
  std::vector<Delivered> want = run(reference, 1, 3);
  std::erase_if(want, [](const Delivered& d) {
    return d.number == 3 || d.number == 7 || d.number == 12;
  });
  EXPECT_EQ(run(skipping, 1, 3), want);
}

INSTANTIATE_TEST_SUITE_P(WorkersAndSeeding, SkipTest,
                         ::testing::Values(std::tuple{0, SeedScope::kWorker},
                                           std::tuple{2, SeedScope::kWorker},
                                           std::tuple{0, SeedScope::kSample},
                                           std::tuple{3, SeedScope::kSample}));

TEST(SkipTest, SkippedSamplesLeaveTheirBatchesOtherwiseUnchanged) {
  StreamProbeDataset ds(40, 2);
  LoaderOptions o = options(2, SeedScope::kSample);
  o.batch_size = 2;
  DataLoader reference(ds, o);
  const std::vector<Delivered> full = run(reference, 4);
  // One sample of step 0 and one of step 5.
  const std::set<std::uint64_t> gone{full[5].indices[1], full[0].indices[0]};
  o.skip.samples.assign(gone.begin(), gone.end());
  DataLoader skipping(ds, o);
  std::vector<Delivered> want;
  for (Delivered d : full) {
    Delivered kept{d.number, d.worker, {}, {}, {}};
    const std::size_t per = d.values.size() / d.indices.size();
    for (std::size_t i = 0; i < d.indices.size(); ++i) {
      if (gone.count(d.indices[i])) continue;
      kept.indices.push_back(d.indices[i]);
      kept.fingerprints.push_back(d.fingerprints[i]);
      kept.values.insert(kept.values.end(), d.values.begin() + i * per,
                         d.values.begin() + (i + 1) * per);
    }
    if (!kept.indices.empty()) want.push_back(kept);
  }
  const std::vector<Delivered> got = run(skipping, 4);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), full.size());
  EXPECT_EQ(got[5].indices.size(), 1u);
  // Both samples of a step: another rank may keep samples there, so the ranks would
  // fall a step apart. Refused, naming the step; skipping the step itself is not.
  o.skip.samples = {full[5].indices[0], full[5].indices[1]};
  DataLoader emptied(ds, o);
  try {
    run(emptied, 4);
    FAIL() << "a batch left without samples";
  } catch (const ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("leave step 5 of epoch 4 without a sample on rank 0; "
                                   "skip the step itself"),
        std::string::npos)
        << e.what();
  }
  o.skip.steps = {{4, 5, 6}};
  DataLoader stepped(ds, o);
  EXPECT_EQ(run(stepped, 4).size(), full.size() - 1);
}

TEST(SkipTest, SkippingSamplesUnderWorkerStreamsAndEmptyRangesAreConfigErrors) {
  StreamProbeDataset ds(40, 1);
  LoaderOptions o = options(0, SeedScope::kWorker);
  o.skip.samples = {3};
  try {
    DataLoader loader(ds, o);
    FAIL() << "sample skips under worker seeding";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("needs seeding sample"), std::string::npos);
  }
  o.skip.samples.clear();
  o.skip.steps = {{0, 4, 4}};
  EXPECT_THROW(DataLoader(ds, o), ConfigError);
  // Sample skips with a batch mix: the skipped sample would still be mixed in.
  o = options(0, SeedScope::kSample);
  o.skip.samples = {3};
  o.mix.mixup_alpha = 0.2;
  o.mix.num_classes = 2;
  try {
    DataLoader loader(ds, o);
    FAIL() << "sample skips with MixUp";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("MixUp or CutMix"), std::string::npos)
        << e.what();
  }
}

// A span of global steps is at most three ranges, whatever its length, and skips
// exactly the steps one range per epoch skipped.
TEST(SkipTest, ASpanOfStepsIsAFewRangesThatSkipExactlyItsSteps) {
  for (const std::uint64_t per_epoch : {1, 3, 7}) {
    for (std::uint64_t a = 0; a < 30; ++a) {
      for (std::uint64_t b = a + 1; b < 32; ++b) {
        SkipList skip;
        skip.steps = epoch_step_ranges(a, b, per_epoch);
        ASSERT_LE(skip.steps.size(), 3u);
        for (std::uint64_t e = 0; e < 40 / per_epoch + 2; ++e)
          for (std::uint64_t k = 0; k < per_epoch; ++k) {
            const std::uint64_t g = e * per_epoch + k;
            EXPECT_EQ(skip.step(e, k), g >= a && g < b)
                << "[" << a << ", " << b << ") of epochs of " << per_epoch << ": step "
                << k << " of epoch " << e;
          }
      }
    }
  }
  // A span within one or two epochs is the per-epoch ranges it always was.
  EXPECT_EQ(epoch_step_ranges(12, 17, 5), (std::vector<StepRange>{{2, 2, 5}, {3, 0, 2}}));
  EXPECT_EQ(epoch_step_ranges(3, 4, 5), (std::vector<StepRange>{{0, 3, 4}}));
  EXPECT_TRUE(epoch_step_ranges(3, 9, 0).empty());
  // 10^15 steps of epochs of 2: three ranges, and the loader takes them at once.
  const std::vector<StepRange> huge = epoch_step_ranges(1, 1'000'000'000'000'001, 2);
  EXPECT_EQ(huge,
            (std::vector<StepRange>{
                {0, 1, 2}, {1, 0, 2, 499'999'999'999'999}, {500'000'000'000'000, 0, 1}}));
  StreamProbeDataset ds(10, 1);
  LoaderOptions o = options(0, SeedScope::kSample);
  o.batch_size = 5;
  o.skip.steps = huge;
  DataLoader loader(ds, o);
  EXPECT_TRUE(run(loader, 7).empty());
  const std::vector<Delivered> first = run(loader, 0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].number, 0u);
  // A range of no epochs is empty: refused.
  o.skip.steps = {{0, 1, 2, 0}};
  EXPECT_THROW(DataLoader(ds, o), ConfigError);
}

}  // namespace
}  // namespace seedloader
