// The ledger (seedloader/ledger.h) against real runs: for every configuration, the
// entries of every step equal what each rank's DataLoader delivers there — index,
// slot, worker and, with per-sample streams, the fingerprint written beside the
// sample.
#include "seedloader/ledger.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/error.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

struct Config {
  Partition partition;
  SeedScope seeding;
  std::uint64_t world_size;
  int workers;
  bool shuffle;
  bool drop_last;
  ShuffleOrder order = ShuffleOrder::kNumpy;
};

std::string describe(const Config& c) {
  return std::string(c.partition == Partition::kElastic ? "elastic" : "strided") +
         (c.seeding == SeedScope::kSample ? " sample" : " worker") +
         " W=" + std::to_string(c.world_size) + " workers=" + std::to_string(c.workers) +
         (c.shuffle ? " shuffle" : "") + (c.drop_last ? " drop_last" : "") +
         (c.order == ShuffleOrder::kTorch ? " torch order" : "");
}

LoaderOptions options_of(const Config& c) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = c.workers;
  o.world_size = c.world_size;
  o.partition = c.partition;
  o.seeding = c.seeding;
  o.shuffle = c.shuffle;
  o.drop_last = c.drop_last;
  o.order = c.order;
  o.seed = 99;
  return o;
}

// What the loaders of every rank deliver in `epoch`, as ledger entries.
std::vector<LedgerEntry> delivered(const Dataset& ds, const Config& c,
                                   std::uint64_t epoch) {
  std::vector<LedgerEntry> out;
  std::vector<std::vector<LedgerEntry>> by_rank;
  for (std::uint64_t rank = 0; rank < c.world_size; ++rank) {
    LoaderOptions o = options_of(c);
    o.rank = rank;
    DataLoader loader(ds, o);
    loader.set_epoch(epoch);
    std::vector<LedgerEntry> mine;
    for (const Batch& b : loader) {
      for (std::uint64_t slot = 0; slot < b.indices().size(); ++slot) {
        LedgerEntry e;
        e.step = b.number();
        e.rank = rank;
        e.worker = b.worker();
        e.slot = slot;
        e.index = b.indices()[slot];
        e.fingerprint = b.fingerprints()[slot];
        mine.push_back(e);
      }
    }
    by_rank.push_back(std::move(mine));
  }
  // By step, then rank: every rank has the same steps.
  for (std::size_t step = 0;; ++step) {
    bool any = false;
    for (const auto& mine : by_rank)
      for (const LedgerEntry& e : mine)
        if (e.step == step) {
          out.push_back(e);
          any = true;
        }
    if (!any) break;
  }
  return out;
}

class LedgerTest : public ::testing::TestWithParam<Config> {};

TEST_P(LedgerTest, EveryStepIsWhatEachRanksLoaderDelivers) {
  const Config c = GetParam();
  StreamProbeDataset ds(43, 1);  // not a multiple of anything: padding and short batches
  LedgerQuery q;
  q.options = options_of(c);
  q.dataset_size = ds.size();
  q.seed = 99;
  q.epoch = 2;
  q.first_step = 0;
  q.end_step = ledger_steps(q);
  const std::vector<LedgerEntry> got = ledger(q);
  const std::vector<LedgerEntry> want = delivered(ds, c, 2);
  ASSERT_EQ(got.size(), want.size()) << describe(c);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const LedgerEntry &g = got[i], &w = want[i];
    EXPECT_EQ(std::tie(g.step, g.rank, g.slot, g.index, g.worker),
              std::tie(w.step, w.rank, w.slot, w.index, w.worker))
        << describe(c) << " entry " << i;
    EXPECT_EQ(g.epoch, 2u);
    if (c.seeding == SeedScope::kSample) {
      EXPECT_EQ(g.fingerprint, w.fingerprint) << describe(c) << " entry " << i;
      EXPECT_EQ(g.stream, (std::vector<std::uint64_t>{2, 2, g.index}));
    } else {
      EXPECT_FALSE(g.fingerprint.has_value());
      EXPECT_EQ(g.stream, (std::vector<std::uint64_t>{
                              1, 2, g.rank, static_cast<std::uint64_t>(g.worker)}));
    }
  }
  // Narrowed: one step of one rank, and one worker's steps.
  q.first_step = 1;
  q.end_step = 2;
  q.rank = c.world_size - 1;
  for (const LedgerEntry& e : ledger(q)) EXPECT_TRUE(e.step == 1 && e.rank == *q.rank);
  q.rank.reset();
  q.first_step = 0;
  q.end_step = ledger_steps(q);
  q.worker = 0;
  for (const LedgerEntry& e : ledger(q)) EXPECT_EQ(e.worker, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Configurations, LedgerTest,
    ::testing::Values(Config{Partition::kStrided, SeedScope::kWorker, 1, 0, false, false},
                      Config{Partition::kStrided, SeedScope::kWorker, 2, 2, true, false},
                      Config{Partition::kStrided, SeedScope::kSample, 3, 2, true, true},
                      Config{Partition::kStrided, SeedScope::kSample, 2, 0, true, false},
                      Config{Partition::kElastic, SeedScope::kSample, 1, 2, true, false},
                      Config{Partition::kElastic, SeedScope::kSample, 2, 3, true, true},
                      Config{Partition::kElastic, SeedScope::kSample, 3, 0, false, false},
                      Config{Partition::kStrided, SeedScope::kWorker, 2, 2, true, false,
                             ShuffleOrder::kTorch},
                      Config{Partition::kElastic, SeedScope::kSample, 2, 1, true, true,
                             ShuffleOrder::kTorch}));

TEST(LedgerTest, AStepPastTheEpochARankOutsideTheWorldAndAWorkerOutsideAreNamed) {
  LedgerQuery q;
  q.options.batch_size = 10;
  q.options.num_workers = 2;
  q.options.world_size = 2;
  q.dataset_size = 100;  // 5 steps per rank
  EXPECT_EQ(ledger_steps(q), 5u);
  q.first_step = 5;
  q.end_step = 6;
  try {
    ledger(q);
    FAIL() << "a step past the epoch";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("5 steps"), std::string::npos) << e.what();
  }
  q.first_step = 0;
  q.end_step = 1;
  q.rank = 2;
  EXPECT_THROW(ledger(q), ConfigError);
  q.rank.reset();
  q.worker = 2;
  EXPECT_THROW(ledger(q), ConfigError);
}

// The streaming form hands on the same entries in the same order, and checks the
// query before the first.
TEST(LedgerTest, TheStreamedEntriesAreTheListsInItsOrder) {
  LedgerQuery q;
  q.options.batch_size = 3;
  q.options.num_workers = 2;
  q.options.world_size = 3;
  q.options.shuffle = true;
  q.options.partition = Partition::kElastic;
  q.options.seeding = SeedScope::kSample;
  q.options.skip.steps = epoch_step_ranges(4, 100, 6);
  q.options.skip.samples = {5, 17};
  q.dataset_size = 61;
  q.seed = 4;
  q.epoch = 2;
  q.first_step = 1;
  q.end_step = ledger_steps(q);
  for (const bool skipped_only : {false, true}) {
    for (const std::optional<int> worker :
         {std::optional<int>(), std::optional<int>(1)}) {
      q.skipped_only = skipped_only;
      q.worker = worker;
      const std::vector<LedgerEntry> all = ledger(q);
      std::vector<LedgerEntry> streamed;
      ledger(q, [&](const LedgerEntry& e) { streamed.push_back(e); });
      ASSERT_EQ(streamed.size(), all.size());
      for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(std::tie(streamed[i].step, streamed[i].rank, streamed[i].slot,
                           streamed[i].index, streamed[i].skipped, streamed[i].stream),
                  std::tie(all[i].step, all[i].rank, all[i].slot, all[i].index,
                           all[i].skipped, all[i].stream));
        if (i > 0)
          EXPECT_LE(std::tie(all[i - 1].step, all[i - 1].rank),
                    std::tie(all[i].step, all[i].rank));
      }
      EXPECT_FALSE(all.empty());
    }
  }
  q.end_step = 99;
  bool called = false;
  EXPECT_THROW(ledger(q, [&](const LedgerEntry&) { called = true; }), ConfigError);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace seedloader
