#include "seedloader/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>

#include "seedloader/elastic_sampler.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

TEST(SequentialSamplerTest, VisitsIndicesInOrder) {
  SequentialSampler s(5);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_EQ(s.indices(3), (std::vector<Index>{0, 1, 2, 3, 4}));
}

TEST(RandomSamplerTest, MatchesNumpyPermutationOfShuffleStream) {
  // Generator(PCG64(SeedSequence(1234, spawn_key=(0, 3)))).permutation(10)
  RandomSampler s(10, 1234);
  EXPECT_EQ(s.indices(3), (std::vector<Index>{2, 3, 8, 1, 5, 7, 4, 0, 9, 6}));
}

TEST(RandomSamplerTest, IsAPermutationThatChangesWithEpochAndRepeatsOnRecall) {
  RandomSampler s(1000, 7);
  std::vector<Index> e0 = s.indices(0);
  std::vector<Index> e1 = s.indices(1);
  EXPECT_EQ(e0, s.indices(0));
  EXPECT_NE(e0, e1);
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e1, SequentialSampler(1000).indices(0));
}

TEST(RandomSamplerTest, DifferentSeedsGiveDifferentOrders) {
  EXPECT_NE(RandomSampler(100, 1).indices(0), RandomSampler(100, 2).indices(0));
}

TEST(RandomSamplerTest, EmptyDatasetGivesNoIndices) {
  EXPECT_TRUE(RandomSampler(0, 1).indices(0).empty());
}

TEST(ShardOrderTest, MatchesNumpysShardPermutationThenBlockShuffles) {
  // g = Generator(PCG64(SeedSequence(1234, spawn_key=(0, 3))))
  // shards = g.permutation(4); order = concatenate(the shards' ranges)
  // for each block of 4: g.shuffle(order[a:a+4])
  EXPECT_EQ(shard_block_permutation(14, {{3, 5, 2, 4}, 4}, 1234, 3),
            (std::vector<Index>{4, 5, 6, 3, 1, 2, 7, 0, 11, 10, 13, 12, 8, 9}));
  // An empty shard, a block that does not divide the data set.
  EXPECT_EQ(shard_block_permutation(14, {{3, 0, 5, 2, 4}, 5}, 7, 0),
            (std::vector<Index>{3, 4, 9, 5, 8, 1, 0, 7, 6, 2, 11, 12, 10, 13}));
  // RandomSampler draws it under ShuffleOrder::kShards.
  auto shards = std::make_shared<const ShardBlocks>(ShardBlocks{{3, 5, 2, 4}, 4});
  EXPECT_EQ(RandomSampler(14, 1234, ShuffleOrder::kShards, shards).indices(3),
            shard_block_permutation(14, *shards, 1234, 3));
}

// 100 shards of 10 to 59 samples, blocks of 150.
ShardBlocks uneven_shards() {
  ShardBlocks s;
  for (std::uint64_t i = 0; i < 100; ++i) s.shard_sizes.push_back(10 + (i * 37) % 50);
  s.block = 150;
  return s;
}

TEST(ShardOrderTest, EachBlockReadsFewShardsAndTheEpochIsAPermutation) {
  const ShardBlocks shards = uneven_shards();
  std::vector<std::uint64_t> shard_of;
  for (std::uint64_t s = 0; s < shards.shard_sizes.size(); ++s)
    shard_of.insert(shard_of.end(), shards.shard_sizes[s], s);
  const std::uint64_t n = shard_of.size();
  const std::vector<Index> e0 = shard_block_permutation(n, shards, 9, 0);
  EXPECT_EQ(e0, shard_block_permutation(n, shards, 9, 0));
  EXPECT_NE(e0, shard_block_permutation(n, shards, 9, 1));
  EXPECT_NE(e0, shard_block_permutation(n, shards, 10, 0));
  std::vector<Index> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, SequentialSampler(n).indices(0));
  // A block of 150 samples spans at most 150 / 10 + 1 shards; in practice a few.
  std::uint64_t widest = 0;
  for (std::uint64_t start = 0; start < n; start += shards.block) {
    std::set<std::uint64_t> read;
    for (std::uint64_t p = start; p < std::min(n, start + shards.block); ++p)
      read.insert(shard_of[e0[p]]);
    widest = std::max<std::uint64_t>(widest, read.size());
  }
  EXPECT_LE(widest, 16u);
  EXPECT_GE(widest, 3u);
  // Samples are shuffled within the block, not left in shard order.
  EXPECT_NE(std::vector<Index>(e0.begin(), e0.begin() + 20),
            SequentialSampler(20).indices(0));
}

TEST(ShardOrderTest, ElasticGlobalBatchesAreTheSameAtEveryWorldSize) {
  auto shards = std::make_shared<const ShardBlocks>(uneven_shards());
  std::uint64_t n = 0;
  for (std::uint64_t size : shards->shard_sizes) n += size;
  std::vector<Index> want;
  for (std::uint64_t world : {1, 2, 4}) {
    ElasticOptions o;
    o.world_size = world;
    o.batch_size = 16 / world;
    o.seed = 3;
    o.order = ShuffleOrder::kShards;
    o.shards = shards;
    const std::vector<Index> global = ElasticSampler(n, o).global_indices(2);
    if (want.empty()) want = global;
    EXPECT_EQ(global, want) << "world size " << world;
  }
  const std::vector<Index> order = shard_block_permutation(n, *shards, 3, 2);
  EXPECT_TRUE(std::equal(order.begin(), order.end(), want.begin()));
}

TEST(ShardOrderTest, WhatCannotBeShardedIsAConfigError) {
  EXPECT_THROW(shard_block_permutation(14, {{3, 5, 2, 4}, 0}, 1, 0), ConfigError);
  try {
    shard_block_permutation(15, {{3, 5, 2, 4}, 4}, 1, 0);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("hold 14 samples in all, but the data set has 15"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(RandomSampler(10, 1, ShuffleOrder::kShards).indices(0), ConfigError);
}

}  // namespace
}  // namespace seedloader
