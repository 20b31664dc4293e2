#include "seedloader/elastic_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "seedloader/error.h"

namespace seedloader {
namespace {

ElasticSampler make(std::uint64_t n, std::uint64_t world, std::uint64_t rank,
                    std::uint64_t batch, bool shuffle, bool drop_last,
                    std::uint64_t seed = 17) {
  return ElasticSampler(n, {.world_size = world,
                            .rank = rank,
                            .batch_size = batch,
                            .shuffle = shuffle,
                            .seed = seed,
                            .drop_last = drop_last});
}

// The global batches as the ranks of one world size deliver them: batch k of every
// rank, concatenated in rank order.
std::vector<std::vector<Index>> global_batches(std::uint64_t n, std::uint64_t global,
                                               std::uint64_t world, bool shuffle,
                                               bool drop_last) {
  std::vector<std::vector<Index>> per_rank;
  for (std::uint64_t r = 0; r < world; ++r)
    per_rank.push_back(make(n, world, r, global / world, shuffle, drop_last).indices(3));
  const std::uint64_t b = global / world;
  const std::uint64_t batches = per_rank[0].size() / b;
  std::vector<std::vector<Index>> out(batches);
  for (std::uint64_t k = 0; k < batches; ++k)
    for (std::uint64_t r = 0; r < world; ++r)
      out[k].insert(out[k].end(),
                    per_rank[r].begin() + static_cast<std::ptrdiff_t>(k * b),
                    per_rank[r].begin() + static_cast<std::ptrdiff_t>((k + 1) * b));
  return out;
}

TEST(ElasticSamplerTest, UnshuffledRanksTakeContiguousRunsOfEachGlobalBatch) {
  // N = 10, world 2, batch 2: G = 4, padded to 12 from the start.
  EXPECT_EQ(make(10, 2, 0, 2, false, false).indices(0),
            (std::vector<Index>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(make(10, 2, 1, 2, false, false).indices(0),
            (std::vector<Index>{2, 3, 6, 7, 0, 1}));
  // drop_last truncates to 8.
  EXPECT_EQ(make(10, 2, 1, 2, false, true).indices(0), (std::vector<Index>{2, 3, 6, 7}));
  // Padding beyond the data set repeats it whole: N = 3, G = 8.
  EXPECT_EQ(make(3, 2, 1, 4, false, false).indices(0), (std::vector<Index>{1, 2, 0, 1}));
}

TEST(ElasticSamplerTest, GlobalBatchesAreTheSameForEveryWorldSizeDividingG) {
  for (bool shuffle : {false, true}) {
    for (bool drop_last : {false, true}) {
      for (std::uint64_t n : {1000u, 1001u, 1013u}) {
        const auto one = global_batches(n, 12, 1, shuffle, drop_last);
        for (std::uint64_t world : {2u, 3u, 4u, 6u, 12u}) {
          EXPECT_EQ(global_batches(n, 12, world, shuffle, drop_last), one)
              << "n " << n << " world " << world << " shuffle " << shuffle
              << " drop_last " << drop_last;
        }
      }
    }
  }
}

TEST(ElasticSamplerTest, AnEpochVisitsEverySampleOnceBeforeAnyPadding) {
  const ElasticSampler s = make(1001, 4, 0, 8, true, false);
  const std::vector<Index> all = s.global_indices(5);
  ASSERT_EQ(all.size(), 1024u);  // 32 x ceil(1001 / 32)
  std::vector<Index> first(all.begin(), all.begin() + 1001);
  std::sort(first.begin(), first.end());
  std::vector<Index> expect(1001);
  std::iota(expect.begin(), expect.end(), Index{0});
  EXPECT_EQ(first, expect);
  EXPECT_EQ(std::vector<Index>(all.begin() + 1001, all.end()),
            std::vector<Index>(all.begin(), all.begin() + 23));
  // Epochs differ; the order is epoch_permutation's.
  EXPECT_NE(s.global_indices(6), all);
  EXPECT_EQ(std::vector<Index>(all.begin(), all.begin() + 1001),
            epoch_permutation(1001, 17, 5));
}

TEST(ElasticSamplerTest, PrecedingIsTheGlobalPositionBeforeTheRanksFirst) {
  // N = 8, G = 4 unshuffled: global batches {0,1,2,3}, {4,5,6,7}.
  EXPECT_EQ(make(8, 2, 0, 2, false, false).preceding(0), (std::vector<Index>{3, 7}));
  EXPECT_EQ(make(8, 2, 1, 2, false, false).preceding(0), (std::vector<Index>{1, 5}));
  EXPECT_EQ(make(8, 1, 0, 4, false, false).preceding(0), (std::vector<Index>{3, 7}));
  EXPECT_EQ(make(8, 4, 3, 1, false, false).preceding(0), (std::vector<Index>{2, 6}));
}

// Canonical nodes: 1,000 samples in shards of 25 to 49, G = 16 cut into C = 8
// parts. The ranks, 2 a node, read the same global batches on 1, 2, 4 and 8 nodes,
// and each node reads only its own parts: a contiguous stretch of the shard order.
// The shard sizes of the canonical-node tests: 1,000 samples in shards of 25 to 49.
std::vector<std::uint64_t> canonical_shards() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t total = 0; total < 1000;) {
    sizes.push_back(std::min<std::uint64_t>(25 + (sizes.size() * 7) % 25, 1000 - total));
    total += sizes.back();
  }
  return sizes;
}

ElasticSampler canonical(std::uint64_t world, std::uint64_t rank, std::uint64_t parts) {
  return ElasticSampler(1000, {.world_size = world,
                               .rank = rank,
                               .batch_size = 16 / world,
                               .shuffle = true,
                               .seed = 5,
                               .order = ShuffleOrder::kShards,
                               .shards = std::make_shared<const ShardBlocks>(
                                   ShardBlocks{canonical_shards(), 100}),
                               .canonical_nodes = parts});
}

// G = 16 cut into C = 8 parts; the ranks, 2 a node, read the same global batches on
// 1, 2, 4 and 8 nodes, each node only its own parts, which hold whole shards but
// the two at their ends.
TEST(ElasticSamplerTest, CanonicalNodesKeepTheGlobalBatchesAndGiveEachNodeItsParts) {
  const std::vector<Index> global = canonical(1, 0, 8).global_indices(2);
  const std::uint64_t total = global.size();
  ASSERT_EQ(total % 16, 0u);
  // Part c: the c-th run of 2 positions of every global batch.
  std::vector<std::vector<Index>> part(8);
  for (std::uint64_t g = 0; g < total / 16; ++g)
    for (std::uint64_t c = 0; c < 8; ++c)
      part[c].insert(part[c].end(),
                     global.begin() + static_cast<std::ptrdiff_t>(g * 16 + c * 2),
                     global.begin() + static_cast<std::ptrdiff_t>(g * 16 + c * 2 + 2));
  // The parts are the shard order's: shard_part_permutation cut in 8.
  const std::vector<Index> order =
      shard_part_permutation(1000, ShardBlocks{canonical_shards(), 100}, 5, 2, 8, total);
  for (std::uint64_t c = 0; c < 8; ++c)
    EXPECT_TRUE(std::equal(part[c].begin(), part[c].end(),
                           order.begin() + static_cast<std::ptrdiff_t>(c * total / 8)))
        << "part " << c;
  std::vector<std::uint64_t> shard_of;
  for (std::uint64_t s = 0; const std::uint64_t size : canonical_shards())
    shard_of.insert(shard_of.end(), size, s++);
  for (std::uint64_t world : {2, 4, 8, 16}) {
    const std::uint64_t nodes = world / 2, b = 16 / world;
    std::vector<Index> batches(total);
    std::uint64_t shards_read = 0;
    for (std::uint64_t n = 0; n < nodes; ++n) {
      std::vector<Index> read, want;
      for (std::uint64_t rank : {2 * n, 2 * n + 1}) {
        const std::vector<Index> mine = canonical(world, rank, 8).indices(2);
        ASSERT_EQ(mine.size(), total / world);
        for (std::uint64_t k = 0; k < total / 16; ++k)
          std::copy_n(mine.begin() + static_cast<std::ptrdiff_t>(k * b), b,
                      batches.begin() + static_cast<std::ptrdiff_t>(k * 16 + rank * b));
        read.insert(read.end(), mine.begin(), mine.end());
      }
      for (std::uint64_t c = n * 8 / nodes; c < (n + 1) * 8 / nodes; ++c)
        want.insert(want.end(), part[c].begin(), part[c].end());
      std::sort(read.begin(), read.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(read, want) << "node " << n << " of " << nodes;
      std::set<std::uint64_t> shards;
      for (const Index i : read) shards.insert(shard_of[i]);
      shards_read += shards.size();
    }
    EXPECT_EQ(batches, global) << world << " ranks";
    // Every shard once, but the ones a part boundary cuts (at most one a boundary),
    // and the padding's repeats at the end.
    EXPECT_LE(shards_read, canonical_shards().size() + (nodes - 1) + 1)
        << nodes << " nodes";
  }
  try {
    canonical(2, 0, 3);
    FAIL() << "3 canonical nodes were taken for G = 16";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("canonical_nodes 3 does not divide the global "
                                         "batch of 16"),
              std::string::npos)
        << e.what();
  }
}

TEST(ElasticSamplerTest, RefusesWhatCannotBeSharded) {
  EXPECT_THROW(make(10, 0, 0, 2, false, false), ConfigError);
  EXPECT_THROW(make(10, 2, 2, 2, false, false), ConfigError);
  EXPECT_THROW(make(10, 2, 0, 0, false, false), ConfigError);
  try {
    make(7, 2, 0, 4, false, true);
    FAIL() << "a data set smaller than G with drop_last was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("global batch of 8"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace seedloader
