// DataLoader correctness: determinism, seeding contract, exactly-once delivery.
#include "seedloader/data_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "seedloader/derive.h"
#include "seedloader/random.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

// Everything a batch carries, copied out so batches can be compared later.
struct BatchCopy {
  std::vector<std::uint64_t> indices;
  std::vector<std::uint64_t> fingerprints;
  std::vector<float> values;
  std::vector<std::int64_t> draws;
  int worker = 0;
  bool operator==(const BatchCopy& o) const {
    return indices == o.indices && fingerprints == o.fingerprints && values == o.values &&
           draws == o.draws;
  }
};

BatchCopy copy_of(const Batch& b) {
  BatchCopy c;
  c.indices.assign(b.indices().begin(), b.indices().end());
  c.fingerprints.assign(b.fingerprints().begin(), b.fingerprints().end());
  auto v = b.tensor("value").values<float>();
  c.values.assign(v.begin(), v.end());
  auto d = b.tensor("draw").values<std::int64_t>();
  c.draws.assign(d.begin(), d.end());
  c.worker = b.worker();
  return c;
}

std::vector<BatchCopy> run_epoch(DataLoader& loader, std::uint64_t epoch) {
  loader.set_epoch(epoch);
  std::vector<BatchCopy> out;
  for (const Batch& b : loader) out.push_back(copy_of(b));
  return out;
}

LoaderOptions base_options(int workers) {
  LoaderOptions o;
  o.batch_size = 7;
  o.num_workers = workers;
  o.prefetch = 2;
  o.shuffle = true;
  o.seed = 1234;
  return o;
}

TEST(DataLoaderTest, SameOptionsGiveBitIdenticalBatchesAcrossRuns) {
  StreamProbeDataset ds(100, 3);
  DataLoader a(ds, base_options(2));
  DataLoader b(ds, base_options(2));
  auto ea = run_epoch(a, 3);
  auto eb = run_epoch(b, 3);
  ASSERT_EQ(ea.size(), 15u);
  EXPECT_EQ(ea, eb);
}

// An iterator whose epoch a later begin() abandoned throws when advanced; before,
// it fetched the new epoch's batches into its own positions, handing out slots
// the new iterator was about to deliver.
TEST(DataLoaderTest, AdvancingAnAbandonedEpochsIteratorThrowsAndLeavesTheNewOneWhole) {
  for (int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    StreamProbeDataset ds(100, 3);
    DataLoader loader(ds, base_options(workers));
    const auto whole = run_epoch(loader, 0);
    loader.set_epoch(0);
    DataLoader::Iterator stale = loader.begin();
    ++stale;
    stale.take().reset();  // it holds no slot, so only the epoch is at stake
    DataLoader::Iterator fresh = loader.begin();  // abandons stale's epoch
    EXPECT_THROW(++stale, Error);
    std::vector<BatchCopy> got;
    for (; !(fresh == DataLoader::Sentinel{}); ++fresh) got.push_back(copy_of(*fresh));
    EXPECT_EQ(got, whole);
  }
}

TEST(DataLoaderTest, DifferentEpochsGiveDifferentAugmentations) {
  StreamProbeDataset ds(50, 2);
  DataLoader loader(ds, base_options(2));
  auto e0 = run_epoch(loader, 0);
  auto e1 = run_epoch(loader, 1);
  std::set<std::uint64_t> f0;
  for (const auto& b : e0) f0.insert(b.fingerprints.begin(), b.fingerprints.end());
  for (const auto& b : e1) {
    for (std::uint64_t f : b.fingerprints) EXPECT_EQ(f0.count(f), 0u);
  }
}

TEST(DataLoaderTest, NoTwoWorkersShareAFingerprintWithinAnEpoch) {
  StreamProbeDataset ds(120, 1);
  LoaderOptions o = base_options(3);
  DataLoader loader(ds, o);
  std::set<std::uint64_t> seen;
  std::size_t n = 0;
  for (const auto& b : run_epoch(loader, 0)) {
    for (std::uint64_t f : b.fingerprints) {
      seen.insert(f);
      ++n;
    }
  }
  EXPECT_EQ(n, 120u);
  EXPECT_EQ(seen.size(), n);
}

TEST(DataLoaderTest, NoTwoRanksShareAFingerprint) {
  StreamProbeDataset ds(90, 1);
  std::set<std::uint64_t> seen;
  std::size_t n = 0;
  for (std::uint64_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o = base_options(2);
    o.world_size = 3;
    o.rank = rank;
    DataLoader loader(ds, o);
    for (const auto& b : run_epoch(loader, 5)) {
      for (std::uint64_t f : b.fingerprints) {
        seen.insert(f);
        ++n;
      }
    }
  }
  EXPECT_EQ(n, 90u);
  EXPECT_EQ(seen.size(), n);
}

TEST(DataLoaderTest, WorkerModeDrawsFromTheWorkerStreamInBatchOrder) {
  StreamProbeDataset ds(40, 2);
  LoaderOptions o = base_options(3);
  DataLoader loader(ds, o);
  std::map<int, Rng> streams;
  for (int w = 0; w < 3; ++w) streams.emplace(w, worker_stream(1234, 2, 0, w));
  auto batches = run_epoch(loader, 2);
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const BatchCopy& b = batches[k];
    ASSERT_EQ(b.worker, static_cast<int>(k % 3)) << "batch " << k;
    Rng& rng = streams.at(b.worker);
    for (std::size_t i = 0; i < b.indices.size(); ++i) {
      EXPECT_EQ(b.fingerprints[i], rng.fingerprint());
      EXPECT_EQ(static_cast<std::uint64_t>(b.draws[i]), rng.next_u64());
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(b.values[i * 2 + j],
                  static_cast<float>(b.indices[i]) + uniform_float(rng));
      }
    }
  }
}

TEST(DataLoaderTest, SampleModeUsesEachIndexsOwnStream) {
  StreamProbeDataset ds(30, 1);
  LoaderOptions o = base_options(2);
  o.seeding = SeedScope::kSample;
  DataLoader loader(ds, o);
  for (const auto& b : run_epoch(loader, 4)) {
    for (std::size_t i = 0; i < b.indices.size(); ++i) {
      Rng rng = sample_stream(1234, 4, b.indices[i]);
      EXPECT_EQ(b.fingerprints[i], rng.fingerprint());
      EXPECT_EQ(static_cast<std::uint64_t>(b.draws[i]), rng.next_u64());
    }
  }
}

class SampleModeWorkersTest : public ::testing::TestWithParam<int> {};

TEST_P(SampleModeWorkersTest, BatchesAreIdenticalForAnyWorkerCount) {
  StreamProbeDataset ds(61, 2);
  LoaderOptions o = base_options(0);
  o.seeding = SeedScope::kSample;
  DataLoader reference(ds, o);
  auto expected = run_epoch(reference, 1);
  o.num_workers = GetParam();
  DataLoader loader(ds, o);
  EXPECT_EQ(run_epoch(loader, 1), expected);
}

INSTANTIATE_TEST_SUITE_P(Workers, SampleModeWorkersTest, ::testing::Values(1, 2, 3, 5));

TEST(DataLoaderTest, ResumedEpochDeliversTheRestOfTheSameBatches) {
  StreamProbeDataset ds(90, 2);
  LoaderOptions o = base_options(2);
  o.seeding = SeedScope::kSample;
  DataLoader full(ds, o);
  auto expected = run_epoch(full, 3);
  o.num_workers = 3;
  DataLoader resumed(ds, o);
  resumed.resume(3, 5);
  std::vector<BatchCopy> rest;
  std::uint64_t k = 5;
  for (const Batch& b : resumed) {
    EXPECT_EQ(b.number(), k++);
    rest.push_back(copy_of(b));
  }
  ASSERT_EQ(rest.size(), expected.size() - 5);
  for (std::size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(rest[i], expected[i + 5]);
}

TEST(DataLoaderTest, APartOfAnEpochDeliversItsBatchesAndLoadsNothingPastItsEnd) {
  StreamProbeDataset ds(90, 2);
  LoaderOptions o = base_options(2);
  o.seeding = SeedScope::kSample;
  DataLoader full(ds, o);
  auto expected = run_epoch(full, 3);
  for (int workers : {0, 2}) {
    o.num_workers = workers;
    DataLoader parts(ds, o);
    // Parts in any order, as a fleet's actor gets them; the epoch's end clamps.
    for (auto [first, end] :
         {std::pair<std::uint64_t, std::uint64_t>{4, 7}, {0, 4}, {7, 1000}}) {
      parts.resume(3, first, end);
      std::uint64_t k = first;
      for (const Batch& b : parts) {
        ASSERT_LT(k, expected.size());
        EXPECT_EQ(b.number(), k);
        EXPECT_EQ(copy_of(b), expected[k])
            << "batch " << k << ", " << workers << " workers";
        ++k;
      }
      EXPECT_EQ(k, std::min<std::uint64_t>(end, expected.size()));
    }
  }
}

TEST(DataLoaderTest, InThreadLoadingMatchesOneWorker) {
  StreamProbeDataset ds(33, 2);
  DataLoader inline_loader(ds, base_options(0));
  DataLoader one_worker(ds, base_options(1));
  EXPECT_EQ(run_epoch(inline_loader, 6), run_epoch(one_worker, 6));
}

TEST(DataLoaderTest, EveryIndexIsDeliveredExactlyOncePerEpoch) {
  StreamProbeDataset ds(101, 1);
  for (int workers : {0, 2, 3}) {
    LoaderOptions o = base_options(workers);
    DataLoader loader(ds, o);
    for (std::uint64_t epoch : {0, 1}) {
      std::vector<std::uint64_t> all;
      for (const auto& b : run_epoch(loader, epoch)) {
        all.insert(all.end(), b.indices.begin(), b.indices.end());
      }
      std::sort(all.begin(), all.end());
      ASSERT_EQ(all.size(), 101u) << workers << " workers";
      for (std::uint64_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i);
    }
  }
}

TEST(DataLoaderTest, RanksTogetherCoverTheDatasetAsTheSamplerSays) {
  StreamProbeDataset ds(64, 1);
  std::vector<std::uint64_t> all;
  for (std::uint64_t rank = 0; rank < 4; ++rank) {
    LoaderOptions o = base_options(2);
    o.world_size = 4;
    o.rank = rank;
    DataLoader loader(ds, o);
    EXPECT_EQ(loader.num_batches(), 3u);  // 16 samples per rank, batches of 7
    for (const auto& b : run_epoch(loader, 0)) {
      all.insert(all.end(), b.indices.begin(), b.indices.end());
    }
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 64u);
  for (std::uint64_t i = 0; i < 64; ++i) EXPECT_EQ(all[i], i);
}

TEST(DataLoaderTest, DropLastDropsTheShortBatch) {
  StreamProbeDataset ds(20, 1);
  LoaderOptions o = base_options(2);
  o.drop_last = true;
  DataLoader loader(ds, o);
  auto batches = run_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 2u);
  for (const auto& b : batches) EXPECT_EQ(b.indices.size(), 7u);
}

TEST(DataLoaderTest, PersistentWorkersSurviveEpochsAndOthersDoNot) {
  StreamProbeDataset ds(20, 1);
  LoaderOptions o = base_options(2);
  o.persistent_workers = true;
  DataLoader persistent(ds, o);
  run_epoch(persistent, 0);
  auto pids = persistent.worker_pids();
  ASSERT_EQ(pids.size(), 2u);
  auto e1 = run_epoch(persistent, 1);
  EXPECT_EQ(persistent.worker_pids(), pids);

  o.persistent_workers = false;
  DataLoader per_epoch(ds, o);
  EXPECT_EQ(run_epoch(per_epoch, 1), e1);  // same streams either way
  EXPECT_TRUE(per_epoch.worker_pids().empty());
}

TEST(DataLoaderTest, BreakingOffAnEpochLeavesTheNextOneIntact) {
  StreamProbeDataset ds(70, 1);
  LoaderOptions o = base_options(2);
  o.persistent_workers = true;
  DataLoader loader(ds, o);
  DataLoader fresh(ds, o);
  loader.set_epoch(2);
  int seen = 0;
  for (const Batch& b : loader) {
    (void)b;
    if (++seen == 2) break;
  }
  EXPECT_EQ(run_epoch(loader, 2), run_epoch(fresh, 2));
}

TEST(DataLoaderTest, TensorViewsDescribeTheCollatedArrays) {
  StreamProbeDataset ds(10, 3);
  LoaderOptions o = base_options(1);
  o.batch_size = 4;
  o.shuffle = false;
  DataLoader loader(ds, o);
  auto it = loader.begin();
  const Batch& b = *it;
  TensorView v = b.tensor("value");
  EXPECT_EQ(v.dtype, DType::kF32);
  EXPECT_EQ(v.shape, (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(v.strides, (std::vector<std::int64_t>{12, 4}));
  EXPECT_EQ(v.bytes(), 48u);
  auto idx = b.tensor("index").values<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(idx.begin(), idx.end()),
            (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_THROW(b.tensor("nope"), ConfigError);
  EXPECT_THROW(v.values<double>(), ConfigError);
}

// Pinned after a kept batch was moved to private memory and dropped: the slot's
// data no longer sits at its place in the region, so no spare blocks are made and
// keeping more batches than slots is an Error, not a worker writing into the hole.
TEST(DataLoaderTest, PinnedAfterADetachedBatchWasDroppedRefusesInsteadOfCrashing) {
  StreamProbeDataset ds(100, 1);
  LoaderOptions o = base_options(2);
  o.prefetch = 1;
  DataLoader loader(ds, o);
  {
    std::vector<Batch> kept;
    loader.set_epoch(0);
    for (auto it = loader.begin(); !(it == loader.end()); ++it) kept.push_back(it.take());
  }  // every detached copy freed
  loader.shared_memory();
  loader.set_epoch(1);
  std::vector<Batch> kept;
  auto it = loader.begin();
  kept.push_back(it.take());
  ++it;
  kept.push_back(it.take());
  EXPECT_THROW(++it, Error);
  kept.clear();
  // Dropped in time, the batches still come.
  DataLoader reference(ds, o);
  EXPECT_EQ(run_epoch(loader, 2), run_epoch(reference, 2));
}

// Pinned after persistent workers were forked, the slots have no spare blocks
// to go on in: keeping more batches than slots is an Error naming the count.
TEST(DataLoaderTest, HoldingMoreBatchesThanSlotsOfARegionPinnedLateIsAClearError) {
  StreamProbeDataset ds(100, 1);
  LoaderOptions o = base_options(2);
  o.prefetch = 1;
  o.persistent_workers = true;
  DataLoader loader(ds, o);
  std::vector<Batch> kept;
  auto it = loader.begin();
  loader.shared_memory();  // the workers run already
  kept.push_back(it.take());
  ++it;
  kept.push_back(it.take());
  try {
    ++it;
    FAIL() << "expected an error for a third held batch";
  } catch (const SlotHeldError& e) {
    EXPECT_EQ(e.code(), ErrorCode::kSlotHeld);
    EXPECT_EQ(e.batch(), 2u);
    EXPECT_EQ(e.slots(), 2);
    EXPECT_NE(std::string(e.what()).find("still held"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2 slots"), std::string::npos) << e.what();
  }
}

class KeptBatchesTest : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {};

// More batches kept than the loader has slots (2 x 2 with workers, 2 without):
// each kept batch whose slot is needed moves to private memory at its address,
// and the slots go on; every kept batch still holds exactly what a run that
// dropped each batch at once delivered. Two epochs: without persistent workers
// the second epoch's workers are forked after the detaches and must fill the
// slots where they moved. Pinned (shared_memory() taken first, as a caller that
// registers the region with CUDA does): no slot moves; each kept batch stays in
// its slot's pinned pages and the slot goes on in a spare block.
TEST_P(KeptBatchesTest, EveryKeptBatchKeepsItsBytesAndTheEpochsGoOn) {
  auto [workers, persistent, pinned] = GetParam();
  StreamProbeDataset ds(60, 2);
  LoaderOptions o = base_options(workers);
  o.prefetch = 2;
  o.persistent_workers = persistent;
  DataLoader reference(ds, o);
  std::vector<BatchCopy> expected = run_epoch(reference, 0);
  for (const BatchCopy& c : run_epoch(reference, 1)) expected.push_back(c);
  DataLoader keeping(ds, o);
  std::span<std::byte> region;
  if (pinned) region = keeping.shared_memory();
  std::vector<Batch> batches;
  for (std::uint64_t e = 0; e < 2; ++e) {
    keeping.set_epoch(e);
    for (auto it = keeping.begin(); !(it == keeping.end()); ++it)
      batches.push_back(it.take());
  }
  ASSERT_EQ(batches.size(), expected.size());
  for (std::size_t k = 0; k < batches.size(); ++k)
    EXPECT_EQ(copy_of(batches[k]), expected[k]) << k;
  if (pinned) {
    // The first batch of each slot stayed in the region, at its place; the others
    // went to spare blocks outside it.
    const std::size_t slots = static_cast<std::size_t>(std::max(workers, 1)) * 2;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      const std::byte* data = batches[k].tensor("value").data;
      const bool inside = data >= region.data() && data < region.data() + region.size();
      EXPECT_EQ(inside, k < slots) << "batch " << k;
    }
  }
  batches.clear();
  // Dropped, the copies and blocks go; the loader runs on as before.
  EXPECT_EQ(run_epoch(keeping, 0), run_epoch(reference, 0));
  EXPECT_EQ(run_epoch(keeping, 1), run_epoch(reference, 1));
}

INSTANTIATE_TEST_SUITE_P(
    WorkersPersistenceAndPinning, KeptBatchesTest,
    ::testing::Values(std::tuple{0, false, false}, std::tuple{2, false, false},
                      std::tuple{2, true, false}, std::tuple{0, false, true},
                      std::tuple{2, false, true}, std::tuple{2, true, true}));

// Pinned, a batch kept past the slots in turn, while others are dropped: each
// slot goes on in the lowest free block, and every batch keeps its bytes.
TEST(DataLoaderTest, PinnedSlotsReuseTheBlocksDroppedBatchesFree) {
  StreamProbeDataset ds(200, 1);
  LoaderOptions o = base_options(2);
  o.prefetch = 1;
  DataLoader reference(ds, o);
  const std::vector<BatchCopy> expected = run_epoch(reference, 0);
  DataLoader loader(ds, o);
  loader.shared_memory();
  loader.set_epoch(0);
  std::vector<Batch> kept;
  std::size_t k = 0;
  for (auto it = loader.begin(); !(it == loader.end()); ++it, ++k) {
    kept.push_back(it.take());
    ASSERT_EQ(copy_of(kept.back()), expected[k]) << k;
    if (kept.size() == 5) kept.erase(kept.begin(), kept.begin() + 3);  // keep 2 of 5
  }
  EXPECT_EQ(k, expected.size());
  for (const Batch& b : kept) EXPECT_EQ(copy_of(b), expected[b.number()]);
}

TEST(DataLoaderTest, KeptBatchesStayValidUntilDropped) {
  StreamProbeDataset ds(40, 1);
  LoaderOptions o = base_options(2);
  o.prefetch = 3;
  DataLoader loader(ds, o);
  loader.set_epoch(0);
  std::vector<Batch> kept;
  auto it = loader.begin();
  for (int i = 0; i < 3; ++i, ++it) kept.push_back(it.take());
  for (std::uint64_t k = 0; k < kept.size(); ++k) EXPECT_EQ(kept[k].number(), k);
  kept.clear();
  int rest = 0;
  for (; !(it == loader.end()); ++it) ++rest;
  EXPECT_EQ(rest, 3);
}

TEST(DataLoaderTest, WorkerInitRunsInEveryWorkerWithItsId) {
  static int tag = -1;  // each worker's own copy after fork
  class TagDataset : public StreamProbeDataset {
   public:
    using StreamProbeDataset::StreamProbeDataset;
    void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override {
      StreamProbeDataset::get(index, rng, out);
      out.field<std::int64_t>(1)[0] = tag;
    }
  } ds(12, 1);
  LoaderOptions o = base_options(3);
  o.rank = 0;
  o.worker_init = [](int worker, std::uint64_t rank) {
    tag = worker * 10 + static_cast<int>(rank);
  };
  DataLoader loader(ds, o);
  loader.set_epoch(0);
  for (const Batch& b : loader) {
    for (std::int64_t t : b.tensor("index").values<std::int64_t>()) {
      EXPECT_EQ(t, b.worker() * 10);
    }
  }
  EXPECT_EQ(tag, -1);  // never ran in this process
}

TEST(DataLoaderTest, SkipPolicyReplacesBadSamplesDeterministically) {
  class Holey : public StreamProbeDataset {
   public:
    using StreamProbeDataset::StreamProbeDataset;
    void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override {
      if (index % 10 == 3 || index == 4) throw DataError("bad " + std::to_string(index));
      StreamProbeDataset::get(index, rng, out);
    }
  } ds(40, 1);
  for (int workers : {0, 2}) {
    LoaderOptions o = base_options(workers);
    o.shuffle = false;
    o.on_bad_sample = BadSample::kSkip;
    o.seeding = SeedScope::kSample;
    DataLoader loader(ds, o);
    ::testing::internal::CaptureStderr();
    auto batches = run_epoch(loader, 0);
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("epoch 0: skipped 6 bad sample(s)"), std::string::npos) << log;
    std::vector<std::uint64_t> all;
    for (const auto& b : batches)
      all.insert(all.end(), b.indices.begin(), b.indices.end());
    ASSERT_EQ(all.size(), 40u);
    EXPECT_EQ(all[3], 5u);  // 3 -> 4 (bad) -> 5
    EXPECT_EQ(all[4], 5u);
    EXPECT_EQ(all[13], 14u);
    EXPECT_EQ(loader.skipped_samples(), 4u + 1u + 1u);  // 3,13,23,33 once, 3 twice, 4
    // The replacement keeps the original index's stream.
    EXPECT_EQ(batches[0].fingerprints[3], sample_stream(1234, 0, 3).fingerprint());
  }
}

TEST(DataLoaderTest, SkipPolicyGivesUpAfterARunOfBadReplacements) {
  class AllBad : public StreamProbeDataset {
   public:
    using StreamProbeDataset::StreamProbeDataset;
    void get(std::uint64_t index, Rng&, SampleWriter&) const override {
      throw DataError("unreadable " + std::to_string(index));
    }
  } ds(100000, 1);
  for (int workers : {0, 1}) {
    LoaderOptions o = base_options(workers);
    o.shuffle = false;
    o.on_bad_sample = BadSample::kSkip;
    DataLoader loader(ds, o);
    try {
      run_epoch(loader, 0);
      FAIL() << "an all-bad dataset was skipped through";
    } catch (const WorkerError& e) {
      EXPECT_NE(std::string(e.what()).find("64 samples after it"), std::string::npos)
          << e.what();
    }
  }
}

TEST(DataLoaderTest, ALeftoverIteratorDoesNotStopANewerEpoch) {
  StreamProbeDataset ds(70, 1);
  for (bool persistent : {false, true}) {
    LoaderOptions o = base_options(2);
    o.persistent_workers = persistent;
    DataLoader loader(ds, o);
    DataLoader fresh(ds, o);
    loader.set_epoch(1);
    std::vector<BatchCopy> got;
    auto live = [&] {
      auto stale = loader.begin();  // walks epoch 1 (holding no slot) ...
      stale.take().reset();
      loader.set_epoch(3);
      auto it = loader.begin();
      for (int k = 0; k < 3; ++k, ++it) got.push_back(copy_of(*it));
      return it;
    }();  // ... and is destroyed here, in the middle of epoch 3
    for (; !(live == loader.end()); ++live) got.push_back(copy_of(*live));
    EXPECT_EQ(got, run_epoch(fresh, 3)) << "persistent " << persistent;
    EXPECT_EQ(run_epoch(loader, 4), run_epoch(fresh, 4)) << "persistent " << persistent;
  }
}

TEST(DataLoaderTest, OversizeVariableSampleIsADataErrorNamingIndexAndField) {
  class Variable : public Dataset {
   public:
    std::uint64_t size() const override { return 8; }
    const SampleLayout& layout() const override { return layout_; }
    void get(std::uint64_t index, Rng&, SampleWriter& out) const override {
      out.set_length(0, index + 1);
    }
    std::string describe() const override { return "Variable"; }
    SampleLayout layout_{{{"tokens", DType::kI32, {4}, true}}};
  } ds;
  LoaderOptions o = base_options(2);
  o.shuffle = false;
  o.batch_size = 2;
  DataLoader loader(ds, o);
  std::vector<std::uint64_t> lengths;
  try {
    for (const Batch& b : loader) {
      for (std::uint64_t n : b.lengths(0)) lengths.push_back(n);
    }
    FAIL() << "sample 4 is larger than declared";
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.failure().index, 4);
    EXPECT_NE(std::string(e.what()).find("'tokens'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(lengths, (std::vector<std::uint64_t>{1, 2, 3, 4}));
}

TEST(DataLoaderTest, ReportsPerWorkerBusyTime) {
  StreamProbeDataset ds(64, 64);
  LoaderOptions o = base_options(2);
  o.persistent_workers = true;
  DataLoader loader(ds, o);
  run_epoch(loader, 0);
  auto busy = loader.worker_busy_seconds();
  ASSERT_EQ(busy.size(), 2u);
  for (double s : busy) EXPECT_GT(s, 0.0);
}

TEST(DataLoaderTest, SlotsHoldNoMoreRowsThanTheDatasetCanFill) {
  // A batch size far beyond the dataset: the one batch holds all 10 samples, and
  // the slots are sized for 10 rows, not 10^6.
  StreamProbeDataset ds(10, 4);
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 1'000'000;
    o.num_workers = workers;
    o.seed = 1;
    DataLoader loader(ds, o);
    EXPECT_LT(loader.shared_memory().size(), 1u << 20) << workers << " workers";
    std::uint64_t batches = 0;
    for (const Batch& b : loader) {
      EXPECT_EQ(b.indices().size(), 10u);
      ++batches;
    }
    EXPECT_EQ(batches, 1u);
  }
}

TEST(DataLoaderTest, ABatchKeptFromAnAbandonedEpochIsNeverReusedOrOverwritten) {
  // The first epoch fills every slot before the consumer breaks off, so each
  // worker's ring comes round to the slot of the batch still kept.
  StreamProbeDataset ds(30, 2);
  for (int workers : {0, 1, 2}) {
    for (bool persistent : {false, true}) {
      LoaderOptions o = base_options(workers);
      o.batch_size = 3;
      o.persistent_workers = persistent && workers > 0;
      DataLoader reference(ds, o);
      const auto expected = run_epoch(reference, 1);
      DataLoader loader(ds, o);
      loader.set_epoch(0);
      auto it = loader.begin();
      Batch kept = it.take();
      const BatchCopy kept_copy = copy_of(kept);
      // As `b = next(iter(loader)); for b in loader: ...` does: the kept batch
      // goes once the next epoch's first batch has arrived.
      loader.set_epoch(1);
      std::vector<BatchCopy> got;
      for (auto b = loader.begin(); b != loader.end(); ++b) {
        got.push_back(copy_of(*b));
        if (!kept.empty()) {
          EXPECT_TRUE(copy_of(kept) == kept_copy) << workers << " workers";
          kept.reset();
        }
      }
      EXPECT_EQ(got, expected) << workers << " workers, persistent " << persistent;
    }
  }
}

TEST(DataLoaderTest, ABatchPlanGivesEachEpochsBatchesAsDrawn) {
  StreamProbeDataset ds(12, 1);
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    o.seed = 3;
    o.seeding = SeedScope::kSample;
    o.persistent_workers = true;
    std::vector<std::uint64_t> drawn;
    // Repeats and uneven sizes, as a sampler drawing with replacement and a
    // user's batch sampler give them; epoch 1 has one batch more.
    o.batch_plan = [&drawn](std::uint64_t epoch) {
      drawn.push_back(epoch);
      std::vector<std::vector<std::uint64_t>> b = {{5, 5, 0}, {11}, {2, 3, 4, 1}};
      if (epoch == 1) b.push_back({7, 7, 7, 7});
      return b;
    };
    DataLoader loader(ds, o);
    EXPECT_EQ(loader.num_batches(), 0u);  // nothing drawn before an epoch begins
    for (std::uint64_t epoch : {0, 1}) {
      auto batches = run_epoch(loader, epoch);
      ASSERT_EQ(batches.size(), epoch == 0 ? 3u : 4u) << workers << " workers";
      EXPECT_EQ(loader.num_batches(), batches.size());
      EXPECT_EQ(batches[0].indices, (std::vector<std::uint64_t>{5, 5, 0}));
      EXPECT_EQ(batches[1].indices, (std::vector<std::uint64_t>{11}));
      EXPECT_EQ(batches[2].indices, (std::vector<std::uint64_t>{2, 3, 4, 1}));
      // A repeated index gets the same per-sample stream both times.
      EXPECT_EQ(batches[0].fingerprints[0], batches[0].fingerprints[1]);
      EXPECT_EQ(batches[0].fingerprints[0], sample_stream(3, epoch, 5).fingerprint());
    }
    EXPECT_EQ(drawn, (std::vector<std::uint64_t>{0, 1}));
  }
}

TEST(DataLoaderTest, ABatchPlanOutsideTheSlotOrTheDatasetIsAConfigErrorNamingIt) {
  StreamProbeDataset ds(12, 1);
  LoaderOptions o;
  o.batch_size = 2;
  o.seed = 1;
  std::vector<std::vector<std::uint64_t>> plan;
  o.batch_plan = [&plan](std::uint64_t) { return plan; };
  DataLoader loader(ds, o);
  auto error_of = [&] {
    try {
      loader.begin();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  plan = {{0, 1}, {2, 3, 4}};
  EXPECT_NE(error_of().find("epoch 0 batch 1 holds 3 indices; a batch holds 1 to 2"),
            std::string::npos)
      << error_of();
  plan = {{0}, {12}};
  EXPECT_NE(error_of().find("batch 1 names sample 12, beyond the dataset's 12 samples"),
            std::string::npos)
      << error_of();
  plan = {{0}, {}};
  EXPECT_NE(error_of().find("batch 1 holds 0 indices"), std::string::npos);
  plan = {{3}};
  EXPECT_EQ(run_epoch(loader, 0).size(), 1u);  // the loader is still usable
  o.shuffle = true;
  EXPECT_THROW(DataLoader(ds, o), ConfigError);
}

}  // namespace
}  // namespace seedloader
