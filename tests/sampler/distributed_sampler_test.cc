#include "seedloader/distributed_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "seedloader/error.h"

namespace seedloader {
namespace {

DistributedSampler make(std::uint64_t n, std::uint64_t world, std::uint64_t rank,
                        bool shuffle, bool drop_last, std::uint64_t seed = 17) {
  return DistributedSampler(n, {.world_size = world,
                                .rank = rank,
                                .shuffle = shuffle,
                                .seed = seed,
                                .drop_last = drop_last});
}

// PyTorch's formulas, written out independently for the expected values.
TEST(DistributedSamplerTest, SizesFollowPyTorch) {
  EXPECT_EQ(make(10, 3, 0, false, false).size(), 4u);  // ceil(10/3)
  EXPECT_EQ(make(10, 3, 0, false, true).size(), 3u);   // ceil((10-3)/3)
  EXPECT_EQ(make(9, 3, 0, false, true).size(), 3u);    // divisible: ceil(9/3)
  EXPECT_EQ(make(2, 5, 0, false, false).size(), 1u);
  EXPECT_EQ(make(10, 3, 0, false, false).total_size(), 12u);
}

TEST(DistributedSamplerTest, UnshuffledShardsMatchPyTorchExamples) {
  // list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False))
  EXPECT_EQ(make(10, 3, 0, false, false).indices(0), (std::vector<Index>{0, 3, 6, 9}));
  EXPECT_EQ(make(10, 3, 1, false, false).indices(0), (std::vector<Index>{1, 4, 7, 0}));
  EXPECT_EQ(make(10, 3, 2, false, false).indices(0), (std::vector<Index>{2, 5, 8, 1}));
  EXPECT_EQ(make(10, 3, 2, false, true).indices(0), (std::vector<Index>{2, 5, 8}));
  // Padding larger than the dataset repeats the whole list: N=2, R=5.
  EXPECT_EQ(make(2, 5, 4, false, false).indices(0), (std::vector<Index>{0}));
  EXPECT_EQ(make(2, 5, 3, false, false).indices(0), (std::vector<Index>{1}));
}

TEST(DistributedSamplerTest, BadArgumentsAreConfigErrorsNamingValues) {
  EXPECT_THROW(make(10, 0, 0, false, false), ConfigError);
  try {
    make(10, 2, 2, false, false);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 is not below world_size 2"),
              std::string::npos);
  }
  EXPECT_THROW(make(2, 3, 0, false, true), ConfigError);
}

TEST(DistributedSamplerTest, SetEpochSelectsTheEpoch) {
  DistributedSampler s = make(100, 2, 1, true, false);
  s.set_epoch(5);
  EXPECT_EQ(s.indices(), s.indices(5));
  EXPECT_NE(s.indices(), s.indices(4));
}

// Over many (N, R, epoch, drop_last, shuffle): shards have equal lengths, are
// disjoint apart from the padding, cover the dataset (or all but the dropped
// tail), repeat on recall and change between epochs when shuffled.
TEST(DistributedSamplerTest, ShardPropertiesHoldAcrossConfigurations) {
  for (std::uint64_t n : {1, 2, 5, 7, 10, 64, 97, 1000}) {
    for (std::uint64_t world : {1, 2, 3, 4, 7, 8}) {
      for (bool drop_last : {false, true}) {
        if (drop_last && n < world) continue;
        for (bool shuffle : {false, true}) {
          for (std::uint64_t epoch : {0, 1, 2}) {
            SCOPED_TRACE("n=" + std::to_string(n) + " world=" + std::to_string(world) +
                         " drop_last=" + std::to_string(drop_last) + " shuffle=" +
                         std::to_string(shuffle) + " epoch=" + std::to_string(epoch));
            std::map<Index, int> seen;
            std::uint64_t expected_len = make(n, world, 0, shuffle, drop_last).size();
            for (std::uint64_t r = 0; r < world; ++r) {
              DistributedSampler s = make(n, world, r, shuffle, drop_last);
              std::vector<Index> idx = s.indices(epoch);
              ASSERT_EQ(idx.size(), expected_len);
              ASSERT_EQ(idx, s.indices(epoch));
              for (Index i : idx) {
                ASSERT_LT(i, n);
                ++seen[i];
              }
            }
            const std::uint64_t total = expected_len * world;
            if (drop_last) {
              // Disjoint; exactly total distinct indices, the dropped ones missing.
              EXPECT_EQ(seen.size(), total);
              for (auto& [i, c] : seen) EXPECT_EQ(c, 1);
            } else {
              // Union covers everything; the surplus is exactly the padding.
              EXPECT_EQ(seen.size(), n);
              std::uint64_t surplus = 0;
              for (auto& [i, c] : seen) surplus += c - 1;
              EXPECT_EQ(surplus, total - n);
            }
          }
        }
      }
    }
  }
}

TEST(DistributedSamplerTest, ShuffledOrderChangesBetweenEpochsForEveryRank) {
  for (std::uint64_t r = 0; r < 4; ++r) {
    DistributedSampler s = make(1000, 4, r, true, false);
    EXPECT_NE(s.indices(0), s.indices(1));
    EXPECT_NE(s.indices(1), s.indices(2));
  }
}

}  // namespace
}  // namespace seedloader
