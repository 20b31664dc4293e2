// A DataLoader over a MixtureDataset: the global batches are the same at every world
// size dividing G and every worker count, each step holds the allocation's counts,
// no sample of a source repeats within that source's epoch, and a sample's stream is
// keyed by (source, source epoch, index), whatever the weights.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/in_memory_dataset.h"
#include "seedloader/mixture_dataset.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kSeed = 77;
constexpr std::uint64_t kGlobal = 12;

// One sample as delivered: its mixture index, its stream's first draw, its values.
struct Row {
  std::uint64_t index;
  std::int64_t draw;
  std::vector<float> value;
  bool operator==(const Row&) const = default;
};

std::shared_ptr<const Dataset> probe(std::uint64_t n) {
  return std::make_shared<StreamProbeDataset>(n, 2);
}

// "small" (13 samples) cycles beside "large" (50); the weights change at step 7.
MixtureDataset mixture(std::vector<WeightPoint> points) {
  return MixtureDataset({{"small", probe(13)}, {"large", probe(50)}},
                        MixtureSchedule({"small", "large"}, std::move(points)), 60);
}

std::vector<WeightPoint> staged() { return {{0, {1, 3}}, {7, {1, 1}}}; }

LoaderOptions options(std::uint64_t world, std::uint64_t rank, int workers) {
  LoaderOptions o;
  o.batch_size = kGlobal / world;
  o.world_size = world;
  o.rank = rank;
  o.num_workers = workers;
  o.seed = kSeed;
  o.seeding = SeedScope::kSample;
  o.partition = Partition::kElastic;
  return o;
}

std::vector<Row> rows_of(const Batch& b) {
  std::vector<Row> rows;
  const auto draws = b.tensor("draw").values<std::int64_t>();
  const auto values = b.tensor("value").values<float>();
  for (std::size_t i = 0; i < b.size(); ++i)
    rows.push_back({b.indices()[i], draws[i], {values[2 * i], values[2 * i + 1]}});
  return rows;
}

// Per step from `first` on, the rank's rows.
std::vector<std::vector<Row>> read_epoch(DataLoader& loader, std::uint64_t epoch,
                                         std::uint64_t first = 0) {
  loader.resume(epoch, first);
  std::vector<std::vector<Row>> steps;
  for (const Batch& b : loader) steps.push_back(rows_of(b));
  return steps;
}

// Every rank's steps of `epochs` epochs, joined rank after rank into global batches.
std::vector<std::vector<Row>> global_batches(const MixtureDataset& ds,
                                             std::uint64_t world, int workers,
                                             std::uint64_t epochs) {
  std::vector<std::vector<Row>> out;
  for (std::uint64_t rank = 0; rank < world; ++rank) {
    DataLoader loader(ds, options(world, rank, workers));
    for (std::uint64_t e = 0; e < epochs; ++e) {
      const auto steps = read_epoch(loader, e);
      EXPECT_EQ(steps.size(), 5u) << "ceil(60 / 12) steps per epoch";
      for (std::size_t k = 0; k < steps.size(); ++k) {
        const std::size_t g = e * steps.size() + k;
        if (out.size() <= g) out.resize(g + 1);
        out[g].insert(out[g].end(), steps[k].begin(), steps[k].end());
      }
    }
  }
  return out;
}

class MixtureWorldTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(MixtureWorldTest, GlobalBatchesAreTheSameAtEveryWorldSizeAndWorkerCount) {
  // A schedule, static weights, and a ramp between points.
  for (const MixtureDataset& ds :
       {mixture(staged()), mixture({{0, {1, 2}}}),
        MixtureDataset(
            {{"small", probe(13)}, {"large", probe(50)}},
            MixtureSchedule({"small", "large"}, {{0, {0, 1}}, {9, {1, 0}}}, true), 60)}) {
    const auto want = global_batches(ds, 1, 0, 3);
    for (const int workers : {0, 1, 2}) {
      EXPECT_EQ(global_batches(ds, GetParam(), workers, 3), want)
          << ds.describe() << ", world " << GetParam() << ", " << workers << " workers";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, MixtureWorldTest, ::testing::Values(1, 2, 3, 4, 6));

// The counts, the source epochs and the streams of `ds`'s first `epochs` epochs.
void check_order(const MixtureDataset& ds, std::uint64_t epochs) {
  const auto batches = global_batches(ds, 1, 2, epochs);
  MixtureAllocation allocation(ds.schedule(), kGlobal);
  MixturePlan plan(MixtureAllocation(ds.schedule(), kGlobal), {13, 50}, kSeed);
  // Per source, per source epoch, the indices read.
  std::vector<std::map<std::uint64_t, std::multiset<std::uint64_t>>> read(2);
  for (std::size_t g = 0; g < batches.size(); ++g) {
    const std::vector<std::uint64_t> want = allocation.next();
    const std::vector<MixtureSample> samples = plan.next();
    ASSERT_EQ(batches[g].size(), samples.size());
    std::vector<std::uint64_t> got(2);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const Row& r = batches[g][i];
      const auto [s, local] = ds.locate(r.index);
      const MixtureSample& m = samples[i];
      EXPECT_EQ(s, m.source) << "step " << g << " row " << i;
      EXPECT_EQ(local, m.index) << "step " << g << " row " << i;
      ++got[s];
      read[s][m.epoch].insert(local);
      Rng rng =
          mixture_sample_stream(kSeed, source_key(ds.sources()[s].name), m.epoch, local);
      EXPECT_EQ(r.draw, static_cast<std::int64_t>(rng.next_u64()))
          << "step " << g << ": " << ds.sources()[s].name << "[" << local << "] epoch "
          << m.epoch;
    }
    EXPECT_EQ(got, want) << "step " << g;
  }
  for (std::size_t s = 0; s < 2; ++s) {
    const std::uint64_t n = ds.sources()[s].dataset->size();
    for (const auto& [epoch, indices] : read[s]) {
      const std::set<std::uint64_t> distinct(indices.begin(), indices.end());
      EXPECT_EQ(distinct.size(), indices.size())
          << ds.sources()[s].name << "'s epoch " << epoch;
      if (epoch + 1 < read[s].size()) EXPECT_EQ(indices.size(), n);
    }
  }
  EXPECT_GE(read[0].size(), 3u) << "the small source cycles";
}

TEST(MixtureLoaderTest, StepsHoldTheAllocationAndSourcesRepeatNothingWithinAnEpoch) {
  check_order(mixture(staged()), 4);
  check_order(mixture({{0, {5, 1}}}), 3);
}

TEST(MixtureLoaderTest, ASamplesStreamDoesNotDependOnTheWeights) {
  // Each (source, index, source epoch) read under both schedules drew the same.
  auto draws = [](const MixtureDataset& ds) {
    std::map<std::pair<std::uint64_t, std::int64_t>, std::vector<float>> out;
    for (const auto& batch : global_batches(ds, 1, 0, 2))
      for (const Row& r : batch) out[{r.index, r.draw}] = r.value;
    return out;
  };
  const auto a = draws(mixture(staged()));
  const auto b = draws(mixture({{0, {3, 1}}}));
  std::size_t shared = 0;
  for (const auto& [key, value] : a) {
    auto it = b.find(key);
    if (it == b.end()) continue;
    ++shared;
    EXPECT_EQ(it->second, value);
  }
  EXPECT_GT(shared, 50u);
}

TEST(MixtureLoaderTest, AResumedEpochGivesTheBatchesOfAnUninterruptedOne) {
  const MixtureDataset ds = mixture(staged());
  DataLoader loader(ds, options(2, 1, 2));
  const auto whole = read_epoch(loader, 2);
  const auto rest = read_epoch(loader, 2, 3);
  EXPECT_EQ(rest, std::vector<std::vector<Row>>(whole.begin() + 3, whole.end()));
}

TEST(MixtureLoaderTest, NewWeightsAtAResumeAtAnotherWorldSizeRepeatAndSkipNothing) {
  // Saved at global step 12 (epoch 2, step 2) on 2 ranks under the staged weights;
  // resumed on 3 ranks with new weights and a third source from there.
  const MixtureDataset before = mixture(staged());
  const std::uint64_t save = 12;
  std::vector<std::vector<Row>> global = global_batches(before, 2, 1, 3);
  global.resize(save);
  const std::vector<std::uint64_t> counts =
      MixtureSampler(before, kGlobal, 1, 0, kSeed).consumed_at(save);
  const MixtureSchedule next({"small", "large", "extra"},
                             {{0, {2, 1, 1}}, {20, {0, 1, 1}}});
  const MixtureDataset after(
      {{"small", probe(13)}, {"large", probe(50)}, {"extra", probe(7)}},
      {{0, MixtureSchedule({"small", "large"}, staged()), {}},
       {save, next, {counts[0], counts[1], 0}}},
      60);
  for (std::uint64_t rank = 0; rank < 3; ++rank) {
    DataLoader loader(after, options(3, rank, 2));
    for (std::uint64_t e = 2; e < 6; ++e) {
      const std::uint64_t first = e == 2 ? 2 : 0;
      const auto steps = read_epoch(loader, e, first);
      for (std::size_t k = 0; k < steps.size(); ++k) {
        const std::size_t g = e * 5 + first + k;
        if (global.size() <= g) global.resize(g + 1);
        global[g].insert(global[g].end(), steps[k].begin(), steps[k].end());
      }
    }
  }
  ASSERT_EQ(global.size(), 30u);
  // The new weights from step 12 on, counted from the saved positions.
  MixtureAllocation allocation(next, kGlobal, save, {counts[0], counts[1], 0});
  // Per source (the new mixture's numbering), how often each index was read. After
  // every step, with T samples of a source of n read, each index was read
  // floor(T / n) or one more times: nothing repeated within a source epoch, nothing
  // skipped.
  std::vector<std::vector<std::uint64_t>> reads(3);
  for (std::size_t s = 0; s < 3; ++s) reads[s].resize(after.sources()[s].dataset->size());
  std::vector<std::uint64_t> total(3);
  for (std::size_t g = 0; g < global.size(); ++g) {
    std::vector<std::uint64_t> per(3);
    for (const Row& r : global[g]) {
      const auto [s, local] = g < save ? before.locate(r.index) : after.locate(r.index);
      ++per[s];
      ++reads[s][local];
      ++total[s];
    }
    for (std::size_t s = 0; s < 3; ++s) {
      const std::uint64_t floor = total[s] / reads[s].size();
      for (std::size_t i = 0; i < reads[s].size(); ++i)
        EXPECT_TRUE(reads[s][i] == floor || reads[s][i] == floor + 1)
            << after.sources()[s].name << "[" << i << "] read " << reads[s][i]
            << " times after step " << g << " of " << total[s] << " samples";
    }
    if (g >= save) EXPECT_EQ(per, allocation.next()) << "step " << g;
  }
  std::vector<std::uint64_t> epochs_done(3);
  for (std::size_t s = 0; s < 3; ++s) epochs_done[s] = total[s] / reads[s].size();
  EXPECT_GE(epochs_done[0], 3u);
  EXPECT_GE(epochs_done[2], 2u) << "the added source starts at its epoch 0 and cycles";
}

TEST(MixtureLoaderTest, AnEpochFromKnownCountsIsTheEpochFromTheStart) {
  const MixtureDataset ds = mixture(staged());
  const MixtureSampler plain(ds, 4, 3, 1, kSeed);
  const std::vector<std::uint64_t> at = plain.consumed_at(40 * 5);
  // A fresh sampler told the counts at epoch 40's first step, as a saved state
  // holds them, computes epoch 40 (and the next) from there.
  const MixtureSampler told({"small", "large"}, {13, 50}, ds.history(), 60, 4, 3, 1,
                            kSeed, {{40 * 5, at}});
  for (const std::uint64_t epoch : {40, 41, 7}) {
    const EpochOrder a = plain.order(epoch);
    const EpochOrder b = told.order(epoch);
    EXPECT_EQ(a.indices, b.indices) << "epoch " << epoch;
    EXPECT_EQ(a.stream_epochs, b.stream_epochs) << "epoch " << epoch;
  }
  // Counts that no step can have are refused when used.
  std::vector<std::uint64_t> wrong = at;
  wrong[0] += 5;
  wrong[1] -= 5;
  const MixtureSampler lied({"small", "large"}, {13, 50}, ds.history(), 60, 4, 3, 1,
                            kSeed, {{40 * 5, wrong}});
  EXPECT_THROW(lied.order(40), ConfigError);
}

TEST(MixtureLoaderTest, WhatAMixtureCannotDoIsAConfigErrorNamingIt) {
  const MixtureDataset ds = mixture(staged());
  LoaderOptions strided = options(2, 0, 0);
  strided.partition = Partition::kStrided;
  EXPECT_THROW(
      {
        try {
          DataLoader loader(ds, strided);
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("needs partition elastic"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      ConfigError);
  auto other = std::make_shared<InMemoryDataset>(
      SampleLayout({{"value", DType::kF32, {3}, false}}), 4);
  EXPECT_THROW(
      {
        try {
          MixtureDataset bad({{"small", probe(13)}, {"odd", other}},
                             MixtureSchedule({"small", "odd"}, {{0, {1, 1}}}));
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("'odd'"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("'small'"), std::string::npos) << e.what();
          throw;
        }
      },
      ConfigError);
  EXPECT_THROW(MixtureDataset({{"a", probe(3)}, {"b", probe(3)}},
                              MixtureSchedule({"a", "c"}, {{0, {1, 1}}})),
               ConfigError);
}

}  // namespace
}  // namespace seedloader
