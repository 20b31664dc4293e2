#include "seedloader/elastic_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
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
