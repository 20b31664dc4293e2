#include "seedloader/batch_sampler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "seedloader/distributed_sampler.h"
#include "seedloader/elastic_sampler.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

std::vector<Index> iota(Index n) {
  std::vector<Index> v(n);
  for (Index i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(BatchSamplerTest, KeepsShortLastBatchUnlessDropLast) {
  BatchSampler keep(iota(10), 4, false);
  ASSERT_EQ(keep.num_batches(), 3u);
  EXPECT_EQ(std::vector<Index>(keep.batch(2).begin(), keep.batch(2).end()),
            (std::vector<Index>{8, 9}));
  BatchSampler drop(iota(10), 4, true);
  ASSERT_EQ(drop.num_batches(), 2u);
  EXPECT_EQ(std::vector<Index>(drop.batch(1).begin(), drop.batch(1).end()),
            (std::vector<Index>{4, 5, 6, 7}));
}

TEST(BatchSamplerTest, ExactMultipleHasNoShortBatch) {
  BatchSampler b(iota(8), 4, false);
  EXPECT_EQ(b.num_batches(), 2u);
  EXPECT_EQ(b.batch(1).size(), 4u);
}

TEST(BatchSamplerTest, ZeroBatchSizeIsAConfigError) {
  try {
    BatchSampler(iota(3), 0, false);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_size is 0"), std::string::npos);
  }
}

TEST(BatchesPerEpochTest, FloorsWithDropLastAndCeilsWithout) {
  EXPECT_EQ(batches_per_epoch({.samples = 10, .batch_size = 4}), 3u);
  EXPECT_EQ(batches_per_epoch({.samples = 10, .batch_size = 4, .drop_last = true}), 2u);
  EXPECT_EQ(batches_per_epoch({.samples = 8, .batch_size = 4}), 2u);
  EXPECT_EQ(batches_per_epoch({.samples = 8, .batch_size = 4, .drop_last = true}), 2u);
  EXPECT_EQ(batches_per_epoch({.samples = 3, .batch_size = 4}), 1u);
  EXPECT_EQ(batches_per_epoch({.samples = 3, .batch_size = 4, .drop_last = true}), 0u);
  EXPECT_EQ(batches_per_epoch({.samples = 0, .batch_size = 4}), 0u);
}

TEST(BatchesPerEpochTest, CountsRightNear2To64) {
  constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
  // (samples + batch_size - 1) / batch_size would wrap to 0 and 1 here.
  EXPECT_EQ(batches_per_epoch({.samples = kMost, .batch_size = 2}),
            std::uint64_t{1} << 63);
  EXPECT_EQ(batches_per_epoch({.samples = kMost - 1, .batch_size = kMost}), 1u);
  EXPECT_EQ(
      batches_per_epoch({.samples = kMost - 1, .batch_size = kMost, .drop_last = true}),
      0u);
  EXPECT_EQ(batches_per_epoch({.samples = kMost, .batch_size = 3}), kMost / 3);
}

TEST(BatchesPerEpochTest, ZeroBatchSizeIsAConfigError) {
  EXPECT_THROW(batches_per_epoch({.samples = 3, .batch_size = 0}), ConfigError);
}

// The batches of b a rank's n samples give, counted one by one.
std::uint64_t counted(std::uint64_t n, std::uint64_t b, bool drop_last) {
  std::uint64_t batches = 0;
  for (std::uint64_t at = 0; at < n; at += b)
    batches += (n - at >= b || !drop_last) ? 1 : 0;
  return batches;
}

// 1, 2, 4, 7 ranks x data sets around each batch size: the count is the batches
// every partition's sampler gives a rank, and each rank gets the same count.
TEST(BatchesPerEpochTest, IsEveryRanksBatchesUnderEitherPartition) {
  for (const std::uint64_t world : {1, 2, 4, 7})
    for (const std::uint64_t b : {1, 3, 4})
      for (std::uint64_t n = 1; n <= 3 * b * world + 2; ++n)
        for (const bool drop_last : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "N " << n << " b " << b << " W " << world
                                            << (drop_last ? " drop_last" : ""));
          for (std::uint64_t rank = 0; rank < world; ++rank) {
            // Strided as the loader builds it: padded, drop_last left to the batches.
            const DistributedSampler strided(n, {.world_size = world, .rank = rank});
            const std::uint64_t per_rank = (n + world - 1) / world;
            ASSERT_EQ(strided.indices(0).size(), per_rank);
            EXPECT_EQ(
                batches_per_epoch(
                    {.samples = strided.size(), .batch_size = b, .drop_last = drop_last}),
                counted(per_rank, b, drop_last));
            const std::uint64_t global = b * world;
            if (drop_last && n < global) continue;  // ElasticSampler refuses it
            const ElasticSampler elastic(n, {.world_size = world,
                                             .rank = rank,
                                             .batch_size = b,
                                             .drop_last = drop_last});
            const std::uint64_t steps = batches_per_epoch(
                {.samples = n, .batch_size = global, .drop_last = drop_last});
            EXPECT_EQ(elastic.num_batches(), steps);
            EXPECT_EQ(
                batches_per_epoch(
                    {.samples = elastic.size(), .batch_size = b, .drop_last = drop_last}),
                steps);
            // Each global batch gives every rank one batch of b; the epoch is the data
            // set padded, or truncated, by less than one global batch.
            EXPECT_EQ(elastic.indices(0).size(), steps * b);
            const std::uint64_t positions = steps * global;
            EXPECT_LT(drop_last ? n - positions : positions - n, global);
          }
        }
}

}  // namespace
}  // namespace seedloader
