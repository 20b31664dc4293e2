// LoaderOptions validation and the in-memory dataset.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <span>
#include <thread>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/in_memory_dataset.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

TEST(InMemoryDatasetTest, LoaderDeliversTheStoredRows) {
  InMemoryDataset ds(SampleLayout({{"x", DType::kI32, {2}, false}}), 5);
  auto x = ds.field<std::int32_t>(0);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>(i * 3);
  LoaderOptions o;
  o.batch_size = 5;
  o.num_workers = 1;
  o.seed = 1;
  DataLoader loader(ds, o);
  int batches = 0;
  for (const Batch& b : loader) {
    auto v = b.tensor("x").values<std::int32_t>();
    ASSERT_EQ(v.size(), 10u);
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<int>(i * 3));
    ++batches;
  }
  EXPECT_EQ(batches, 1);
  EXPECT_THROW(ds.field<float>(0), ConfigError);
}

TEST(LoaderOptionsTest, UnsetSeedIsDrawnAndReported) {
  StreamProbeDataset ds(4, 1);
  LoaderOptions o;
  DataLoader a(ds, o);
  DataLoader b(ds, o);
  EXPECT_NE(a.base_seed(), b.base_seed());
  EXPECT_EQ(a.options().seed, a.base_seed());
}

TEST(LoaderOptionsTest, UnsetSeedIsRefusedWhereRanksWouldShuffleApart) {
  StreamProbeDataset ds(8, 1);
  LoaderOptions o;
  o.world_size = 2;
  o.rank = 1;
  o.shuffle = true;
  try {
    DataLoader loader(ds, o);
    ADD_FAILURE() << "a shuffled loader of 2 ranks drew its own seed";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no seed given for rank 1 of 2"), std::string::npos) << what;
    EXPECT_NE(what.find("same seed"), std::string::npos) << what;
  }
  o.shuffle = false;  // the order does not depend on the seed: nothing overlaps
  DataLoader sequential(ds, o);
  EXPECT_TRUE(sequential.options().seed.has_value());
  o.shuffle = true;
  o.seed = 5;
  DataLoader seeded(ds, o);
  EXPECT_EQ(seeded.base_seed(), 5u);
}

// An in-memory data set that says it is stored in shards of 3, 5, 2 and 4 samples.
class ShardedRows : public InMemoryDataset {
 public:
  ShardedRows() : InMemoryDataset(SampleLayout({{"x", DType::kI64, {}, false}}), 14) {
    auto x = field<std::int64_t>(0);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int64_t>(i);
  }
  std::vector<std::uint64_t> shard_sizes() const override { return {3, 5, 2, 4}; }
};

TEST(LoaderOptionsTest, ShardOrderDeliversTheShardBlockPermutationAtAnyWorkerCount) {
  ShardedRows ds;
  const std::vector<Index> want = shard_block_permutation(14, {{3, 5, 2, 4}, 4}, 77, 1);
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 3;
    o.num_workers = workers;
    o.shuffle = true;
    o.seed = 77;
    o.order = ShuffleOrder::kShards;
    o.shuffle_block = 4;
    DataLoader loader(ds, o);
    loader.set_epoch(1);
    std::vector<Index> got;
    for (const Batch& b : loader) {
      for (std::int64_t v : b.tensor("x").values<std::int64_t>())
        got.push_back(static_cast<Index>(v));
    }
    EXPECT_EQ(got, want) << workers << " workers";
  }
  // The default block is four times the largest shard: one block here.
  LoaderOptions o;
  o.shuffle = true;
  o.seed = 77;
  o.order = ShuffleOrder::kShards;
  DataLoader loader(ds, o);
  EXPECT_EQ(make_sampler(14, o, 77, ds.shard_sizes())->indices(0),
            shard_block_permutation(14, {{3, 5, 2, 4}, 20}, 77, 0));
}

// Rows 0..23 that take 20 ms each to read, ask for `read_ahead` samples past the
// slots, and write every will_read() call to a pipe as [count, indices...].
class AnnouncedRows : public InMemoryDataset {
 public:
  explicit AnnouncedRows(int pipe_out, std::uint64_t read_ahead = 0)
      : InMemoryDataset(SampleLayout({{"x", DType::kI64, {}, false}}), 24),
        out_(pipe_out),
        read_ahead_(read_ahead) {}
  std::uint64_t read_ahead() const override { return read_ahead_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& writer) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    InMemoryDataset::get(index, rng, writer);
  }
  void will_read(std::span<const std::uint64_t> indices) const noexcept override {
    std::vector<std::uint64_t> record{indices.size()};
    record.insert(record.end(), indices.begin(), indices.end());
    const std::size_t bytes = record.size() * sizeof(std::uint64_t);
    if (::write(out_, record.data(), bytes) != static_cast<ssize_t>(bytes)) std::abort();
  }

 private:
  int out_;
  std::uint64_t read_ahead_;
};

// One epoch's batches and the worker's will_read() calls, in order.
struct Announced {
  std::vector<std::vector<std::uint64_t>> batches;
  std::vector<std::vector<std::uint64_t>> said;
};

Announced announced(std::uint64_t read_ahead, const LoaderOptions& o) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  AnnouncedRows ds(fds[1], read_ahead);
  Announced a;
  {
    DataLoader loader(ds, o);
    for (const Batch& b : loader)
      a.batches.emplace_back(b.indices().begin(), b.indices().end());
  }
  ::close(fds[1]);
  for (std::uint64_t count; ::read(fds[0], &count, sizeof count) == sizeof count;) {
    a.said.emplace_back(count);
    const auto bytes = static_cast<ssize_t>(count * sizeof(std::uint64_t));
    EXPECT_EQ(::read(fds[0], a.said.back().data(), static_cast<std::size_t>(bytes)),
              bytes);
  }
  ::close(fds[0]);
  return a;
}

TEST(LoaderOptionsTest, AWorkerAnnouncesItsBatchAndTheTasksWaitingBehindIt) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 1;
  o.prefetch = 3;
  o.shuffle = true;
  o.seed = 4;
  const auto [batches, said] = announced(0, o);
  ASSERT_EQ(batches.size(), 6u);
  ASSERT_EQ(said.size(), 6u);  // one announcement per batch, in the worker's order
  for (std::size_t k = 0; k < said.size(); ++k) {
    // The batch being started first, then whatever tasks wait behind it. Batch 1
    // has batch 2 behind it for sure: the loader issued tasks 0, 1 and 2 into the
    // three slots when the epoch began, while batch 0 took 80 ms to read.
    std::vector<std::uint64_t> want = batches[k];
    if (k == 1) want.insert(want.end(), batches[2].begin(), batches[2].end());
    ASSERT_GE(said[k].size(), want.size()) << "batch " << k;
    EXPECT_TRUE(std::equal(want.begin(), want.end(), said[k].begin())) << "batch " << k;
  }
}

TEST(LoaderOptionsTest, AWorkerAlsoAnnouncesTheReadAheadTheDataSetAsksFor) {
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 1;
  o.prefetch = 1;  // no task waits behind the current one
  o.shuffle = true;
  o.seed = 9;
  const auto [batches, said] = announced(6, o);
  ASSERT_EQ(batches.size(), 6u);
  ASSERT_EQ(said.size(), 6u);
  std::vector<std::uint64_t> order;
  for (const auto& b : batches) order.insert(order.end(), b.begin(), b.end());
  for (std::size_t k = 0; k < said.size(); ++k) {
    // Batch k, then the next 6 samples of the epoch: the loader rewrites them
    // before it hands out batch k, and cannot hand out k + 1 (one slot) before
    // the worker has read them.
    std::vector<std::uint64_t> want = batches[k];
    const std::size_t from = 4 * (k + 1);
    want.insert(
        want.end(),
        order.begin() + static_cast<std::ptrdiff_t>(std::min(from, order.size())),
        order.begin() + static_cast<std::ptrdiff_t>(std::min(from + 6, order.size())));
    EXPECT_EQ(said[k], want) << "batch " << k;
  }
}

TEST(LoaderOptionsTest, ShardOrderOverADataSetWithoutShardsNamesIt) {
  InMemoryDataset ds(SampleLayout({{"x", DType::kI32, {2}, false}}), 5);
  LoaderOptions o;
  o.shuffle = true;
  o.seed = 1;
  o.order = ShuffleOrder::kShards;
  try {
    DataLoader loader(ds, o);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("order shards"), std::string::npos) << what;
    EXPECT_NE(what.find(ds.describe()), std::string::npos) << what;
  }
}

TEST(LoaderOptionsTest, CanonicalNodesAreCheckedAgainstThePartitionAndTheNodes) {
  const auto problem = [](LoaderOptions o) {
    try {
      validate(o, 100);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  LoaderOptions o;
  o.batch_size = 4;
  o.world_size = 4;
  o.canonical_nodes = 8;
  EXPECT_NE(problem(o).find("canonical_nodes needs partition elastic"),
            std::string::npos);
  o.partition = Partition::kElastic;
  o.seeding = SeedScope::kSample;
  EXPECT_EQ(problem(o), "");
  o.nodes = 2;
  EXPECT_EQ(problem(o), "");
  o.nodes = 3;
  EXPECT_NE(problem(o).find("canonical_nodes 8 on 3 nodes of 4 ranks"), std::string::npos)
      << problem(o);
  o.nodes = 8;  // divides C, not the world
  EXPECT_NE(problem(o).find("on 8 nodes of 4 ranks"), std::string::npos);
}

}  // namespace
}  // namespace seedloader
