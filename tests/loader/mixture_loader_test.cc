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
#include <tuple>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/in_memory_dataset.h"
#include "seedloader/ledger.h"
#include "seedloader/loader_options.h"
#include "seedloader/mixture_dataset.h"
#include "seedloader/random.h"
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

constexpr std::int64_t kNoisyClasses = 5;

// A source of 8x8 images, each its index plus noise from its stream, labelled
// index % kNoisyClasses: what a batch mix reads. get() of an index in `bad` fails.
class NoisyImages : public Dataset {
 public:
  explicit NoisyImages(std::uint64_t n, std::set<std::uint64_t> bad = {})
      : n_(n),
        bad_(std::move(bad)),
        layout_(
            {{"image", DType::kF32, {8, 8}, false}, {"label", DType::kI64, {}, false}}) {}
  std::uint64_t size() const override { return n_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override {
    if (bad_.count(index) != 0)
      throw DataError(describe() + ": sample " + std::to_string(index) + " is damaged");
    for (float& v : out.field<float>(0))
      v = static_cast<float>(index) + uniform_float(rng);
    out.field<std::int64_t>(1)[0] = static_cast<std::int64_t>(index) % kNoisyClasses;
  }
  std::string describe() const override {
    return "NoisyImages(" + std::to_string(n_) + ")";
  }

 private:
  std::uint64_t n_;
  std::set<std::uint64_t> bad_;
  SampleLayout layout_;
};

MixtureDataset noisy_mixture(std::set<std::uint64_t> small_bad = {},
                             std::set<std::uint64_t> large_bad = {}) {
  return MixtureDataset(
      {{"small", std::make_shared<NoisyImages>(13, std::move(small_bad))},
       {"large", std::make_shared<NoisyImages>(50, std::move(large_bad))}},
      MixtureSchedule({"small", "large"}, staged()), 60);
}

// One global batch as delivered: indices, image bytes as floats, targets.
struct MixedStep {
  std::vector<std::uint64_t> indices;
  std::vector<float> images;
  std::vector<float> targets;
  bool operator==(const MixedStep&) const = default;
};

// Every rank's batches of epochs 0-2 joined into global steps.
std::vector<MixedStep> mixed_steps(const MixtureDataset& ds, std::uint64_t world,
                                   int workers, const BatchMix& mix, BadSample bad) {
  std::vector<MixedStep> out;
  for (std::uint64_t rank = 0; rank < world; ++rank) {
    LoaderOptions o = options(world, rank, workers);
    o.mix = mix;
    o.on_bad_sample = bad;
    DataLoader loader(ds, o);
    std::size_t g = 0;
    for (std::uint64_t e = 0; e < 3; ++e) {
      loader.set_epoch(e);
      for (const Batch& b : loader) {
        if (out.size() <= g) out.resize(g + 1);
        MixedStep& step = out[g++];
        step.indices.insert(step.indices.end(), b.indices().begin(), b.indices().end());
        const auto image = b.tensor("image").values<float>();
        step.images.insert(step.images.end(), image.begin(), image.end());
        if (mix.enabled()) {
          const auto t = b.tensor("target").values<float>();
          step.targets.insert(step.targets.end(), t.begin(), t.end());
        }
      }
    }
  }
  return out;
}

TEST(MixtureLoaderTest, MixedBatchesAreTheSameAtEveryWorldSizeAndPairAcrossRanks) {
  const MixtureDataset ds = noisy_mixture();
  for (const auto& [mixup, cutmix] : {std::pair{0.4, 0.0}, std::pair{0.0, 1.0}}) {
    BatchMix mix;
    mix.mixup_alpha = mixup;
    mix.cutmix_alpha = cutmix;
    mix.num_classes = kNoisyClasses;
    const auto one = mixed_steps(ds, 1, 0, mix, BadSample::kRaise);
    ASSERT_EQ(one.size(), 15u);
    const auto plain = mixed_steps(ds, 1, 0, BatchMix{}, BadSample::kRaise);
    std::size_t changed = 0;
    for (std::size_t g = 0; g < one.size(); ++g) {
      ASSERT_EQ(one[g].indices, plain[g].indices) << "step " << g;
      changed += one[g].images != plain[g].images ? 1 : 0;
    }
    EXPECT_GT(changed, 10u) << "the batches were mixed";
    for (const std::uint64_t world : {2u, 3u, 4u, 6u}) {
      for (const int workers : {0, 2}) {
        EXPECT_EQ(mixed_steps(ds, world, workers, mix, BadSample::kRaise), one)
            << "world " << world << ", " << workers << " workers, mixup " << mixup
            << ", cutmix " << cutmix;
      }
    }
  }
}

TEST(MixtureLoaderTest, ABadSampleIsReplacedFromItsOwnSource) {
  // small's last sample (index 12) and large's sample 49 (its last, mixture index
  // 62) and 3 (16) are damaged: replaced by the next of their own source,
  // wrapping round within it: 12 -> 0, 62 -> 13, 16 -> 17.
  const auto clean = mixed_steps(noisy_mixture(), 1, 0, BatchMix{}, BadSample::kRaise);
  const MixtureDataset damaged = noisy_mixture({12}, {3, 49});
  const std::map<std::uint64_t, std::uint64_t> replaced = {{12, 0}, {62, 13}, {16, 17}};
  for (const std::uint64_t world : {1u, 3u}) {
    const auto got = mixed_steps(damaged, world, 2, BatchMix{}, BadSample::kSkip);
    ASSERT_EQ(got.size(), clean.size());
    std::set<std::uint64_t> seen;
    for (std::size_t g = 0; g < got.size(); ++g) {
      ASSERT_EQ(got[g].indices.size(), clean[g].indices.size());
      for (std::size_t i = 0; i < got[g].indices.size(); ++i) {
        const std::uint64_t was = clean[g].indices[i];
        const auto it = replaced.find(was);
        EXPECT_EQ(got[g].indices[i], it == replaced.end() ? was : it->second)
            << "world " << world << ", step " << g << " row " << i;
        if (it != replaced.end()) seen.insert(was);
      }
    }
    EXPECT_EQ(seen.size(), replaced.size()) << "every damaged sample was met";
  }
  LoaderOptions strict = options(1, 0, 0);
  DataLoader loader(damaged, strict);
  EXPECT_THROW(
      {
        try {
          for (const Batch& b : loader) (void)b;
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("is damaged"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}

// One rank's delivered samples of one epoch: (step, slot) -> (index, fingerprint,
// stream epoch).
using MixtureRows = std::map<std::pair<std::uint64_t, std::uint64_t>,
                             std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>;

MixtureRows read_rows(const MixtureDataset& ds, const LoaderOptions& o,
                      std::uint64_t epoch) {
  DataLoader loader(ds, o);
  loader.set_epoch(epoch);
  MixtureRows out;
  for (const Batch& b : loader)
    for (std::size_t i = 0; i < b.size(); ++i)
      out[{b.number(), i}] = {b.indices()[i], b.fingerprints()[i], b.stream_epochs()[i]};
  return out;
}

TEST(MixtureLoaderTest, TheLedgerGivesWhatEachRankReadsAndSkipsLeaveTheRestAsItWas) {
  const MixtureDataset ds = mixture(staged());
  LedgerQuery q;
  q.options = options(2, 0, 2);
  q.seed = kSeed;
  q.mixture = ledger_mixture(ds);
  q.epoch = 2;  // the small source in its epochs 1 and 2
  q.end_step = 5;
  EXPECT_EQ(ledger_steps(q), 5u);
  const std::vector<LedgerEntry> all = ledger(q);
  ASSERT_EQ(all.size(), 5u * kGlobal);
  std::map<std::uint64_t, MixtureRows> want;
  for (const std::uint64_t rank : {0u, 1u})
    want[rank] = read_rows(ds, options(2, rank, 2), 2);
  std::set<std::uint64_t> source_epochs;
  for (const LedgerEntry& e : all) {
    const auto& [index, fingerprint, stream_epoch] = want[e.rank].at({e.step, e.slot});
    EXPECT_EQ(e.index, index) << "step " << e.step << " rank " << e.rank;
    EXPECT_EQ(e.fingerprint, fingerprint) << "step " << e.step << " rank " << e.rank;
    EXPECT_EQ(e.stream_epoch, stream_epoch) << "step " << e.step << " rank " << e.rank;
    const auto [s, local] = ds.locate(e.index);
    EXPECT_EQ(e.stream, mixture_sample_key(source_key(ds.sources()[s].name),
                                           e.stream_epoch, local));
    if (s == 0) source_epochs.insert(e.stream_epoch);
  }
  EXPECT_GE(source_epochs.size(), 2u) << "the small source crosses an epoch here";

  // Step 1 skipped, and one sample of step 3: the rest is delivered as it was, and
  // the ledger marks exactly what went.
  const std::uint64_t gone = std::get<0>(want[1].at({3, 2}));
  LoaderOptions skipping = options(2, 1, 2);
  skipping.skip.steps = {StepRange{2, 1, 2}};
  skipping.skip.samples = {gone};
  MixtureRows rest;
  for (const auto& [at, row] : want[1])
    if (at.first != 1 && std::get<0>(row) != gone) rest[at] = row;
  MixtureRows got = read_rows(ds, skipping, 2);
  // MixtureRows slots close up after a skipped sample: compare by step, in order.
  auto by_step = [](const MixtureRows& d) {
    std::map<std::uint64_t, std::vector<std::uint64_t>> out;
    for (const auto& [at, row] : d) out[at.first].push_back(std::get<0>(row));
    return out;
  };
  EXPECT_EQ(by_step(got), by_step(rest));
  q.options = skipping;
  q.rank = 1;
  q.skipped_only = true;
  std::multiset<std::uint64_t> marked;
  for (const LedgerEntry& e : ledger(q)) {
    EXPECT_TRUE(e.step == 1 || e.index == gone) << "step " << e.step;
    marked.insert(e.index);
  }
  std::size_t expected_marked = 0;
  for (const auto& [at, row] : want[1])
    expected_marked += at.first == 1 || std::get<0>(row) == gone ? 1 : 0;
  EXPECT_EQ(marked.size(), expected_marked);
  EXPECT_GT(expected_marked, kGlobal / 2);
}

TEST(MixtureLoaderTest, AnIndexOfTheSavedMixtureMovesWithItsSource) {
  const MixtureDataset before = mixture(staged());  // small 13, large 50
  const MixtureState saved = mixture_state(before, kGlobal, kSeed, 0, 0);
  // A source added in front at a resume moves every index.
  const MixtureDataset after(
      {{"extra", probe(7)}, {"small", probe(13)}, {"large", probe(50)}},
      MixtureSchedule({"extra", "small", "large"}, {{0, {1, 1, 1}}}), 60);
  EXPECT_EQ(moved_index(saved, after, 0), 7u);
  EXPECT_EQ(moved_index(saved, after, 12), 19u);
  EXPECT_EQ(moved_index(saved, after, 13), 20u);
  EXPECT_EQ(moved_index(saved, after, 62), 69u);
  EXPECT_EQ(after.locate(moved_index(saved, after, 20)),
            (std::pair<std::uint32_t, std::uint64_t>{2, 7}));
  EXPECT_THROW(moved_index(saved, after, 63), ConfigError);
  const MixtureDataset without({{"large", probe(50)}},
                               MixtureSchedule({"large"}, {{0, {1}}}), 60);
  EXPECT_THROW(
      {
        try {
          moved_index(saved, without, 3);
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("'small'"), std::string::npos) << e.what();
          throw;
        }
      },
      ConfigError);
}

// samples_per_epoch near 2^64: the epoch's length is ceil(N / G) without wrapping,
// and an epoch whose samples would pass 2^64 - 1 is refused, naming the option.
TEST(MixtureLoaderTest, AnEpochNear2To64SamplesIsCountedRightOrRefused) {
  const MixtureDataset ds = mixture(staged());
  const std::uint64_t most = ~std::uint64_t{0};
  // G = 3 divides 2^64 - 1: the epoch is exactly (2^64 - 1) / 3 global steps.
  const MixtureSampler exact({"small", "large"}, {13, 50}, ds.history(), most, 3, 1, 0,
                             kSeed);
  EXPECT_EQ(exact.steps_per_epoch(), most / 3);
  EXPECT_EQ(exact.size(), most);
  // Its next epoch starts past 2^64 - 1 samples.
  try {
    exact.order(1);
    FAIL() << "an epoch past 2^64 samples";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("2^64 - 1 samples"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(exact.consumed_at(most / 3 + 1), ConfigError);
  // G = 32: 2^59 steps of 32 would be 2^64 samples.
  try {
    MixtureSampler({"small", "large"}, {13, 50}, ds.history(), most, 32, 1, 0, kSeed);
    FAIL() << "an epoch of 2^64 samples";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("samples_per_epoch 18446744073709551615"),
              std::string::npos)
        << e.what();
  }
  // An epoch too large to hold is refused, not an allocation failure.
  try {
    exact.order(0);
    FAIL() << "an epoch of 2^64 - 1 entries";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("too large to hold"), std::string::npos)
        << e.what();
  }
}

// A saved position no epoch has is refused at once, at any step: resuming costs
// at most an epoch's steps.
TEST(MixtureLoaderTest, AResumeAtAStepNoEpochHasIsRefusedAtOnce) {
  const MixtureDataset ds = mixture(staged());  // 5 steps of 12 an epoch
  const MixtureState good = mixture_state(ds, kGlobal, kSeed, 10, 13);
  EXPECT_NO_THROW(resumed_mixture(ds, good, kGlobal, kSeed));
  const std::uint64_t far = std::uint64_t{1} << 62;
  for (const auto& [first, step] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
           {10, far}, {10, 16}, {10, 9}, {11, 13}, {far / 5 * 5, far / 5 * 5 + 1}}) {
    MixtureState bad = good;
    bad.epoch_first_step = first;
    bad.step = step;
    try {
      resumed_mixture(ds, bad, kGlobal, kSeed);
      FAIL() << "a position at step " << step << " of the epoch from " << first;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("step " + std::to_string(step)),
                std::string::npos)
          << e.what();
    }
  }
  // A position an epoch can have, far on, with counts that are not the history's:
  // refused by the counts, as fast.
  MixtureState lied = good;
  lied.epoch_first_step = 5'000'000'000'000;
  lied.step = lied.epoch_first_step + 3;
  EXPECT_THROW(resumed_mixture(ds, lied, kGlobal, kSeed), ConfigError);
}

// A data set that passes everything through to `inner`, and names inner's
// mixture only when `forward` is set.
class Wrapper final : public Dataset {
 public:
  Wrapper(const Dataset& inner, bool forward) : inner_(inner), forward_(forward) {}
  std::uint64_t size() const override { return inner_.size(); }
  const SampleLayout& layout() const override { return inner_.layout(); }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override {
    inner_.get(index, rng, out);
  }
  std::string describe() const override { return "Wrapper(" + inner_.describe() + ")"; }
  const MixtureDataset* mixture() const override {
    return forward_ ? inner_.mixture() : nullptr;
  }

 private:
  const Dataset& inner_;
  bool forward_;
};

TEST(MixtureLoaderTest, TheLoaderReadsAMixtureInItsOrderThroughAWrapperThatNamesIt) {
  const MixtureDataset ds = mixture(staged());
  const LoaderOptions o = options(3, 1, 0);
  const MixtureSampler order(ds, o.batch_size, o.world_size, o.rank, kSeed);
  const std::vector<Index> built_in = make_sampler(ds.size(), o, kSeed)->indices(2);
  ASSERT_NE(order.indices(2), built_in);
  EXPECT_EQ(loader_sampler(ds, o, kSeed)->indices(2), order.indices(2));
  EXPECT_EQ(loader_sampler(Wrapper(ds, true), o, kSeed)->indices(2), order.indices(2));
  // A data set that does not say it is a mixture gets the built-in order.
  EXPECT_EQ(loader_sampler(Wrapper(ds, false), o, kSeed)->indices(2), built_in);
  // The refusals are the loader's, through the wrapper too.
  LoaderOptions strided = o;
  strided.partition = Partition::kStrided;
  EXPECT_THROW(loader_sampler(Wrapper(ds, true), strided, kSeed), ConfigError);
  EXPECT_NO_THROW(loader_sampler(Wrapper(ds, false), strided, kSeed));
}

}  // namespace
}  // namespace seedloader
