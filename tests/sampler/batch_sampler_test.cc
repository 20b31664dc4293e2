#include "seedloader/batch_sampler.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace seedloader
