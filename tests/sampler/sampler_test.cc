#include "seedloader/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>

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

}  // namespace
}  // namespace seedloader
