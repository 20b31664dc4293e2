// Known answers computed with numpy 1.24 (Generator(PCG64(SeedSequence(7)))).
#include "seedloader/random.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "seedloader/derive.h"

namespace seedloader {
namespace {

Rng seven() { return Rng(SeedSequence(7)); }

TEST(RandomTest, BoundedMatchesNumpyIntegers) {
  Rng rng = seven();
  for (std::uint64_t e : {9, 6, 6, 8, 5}) EXPECT_EQ(bounded(rng, 10), e);
  for (std::uint64_t e : {247617924053ull, 330036320526ull, 960482170696ull}) {
    EXPECT_EQ(bounded(rng, std::uint64_t{1} << 40), e);
  }
  for (std::uint64_t e : {775, 912, 5}) EXPECT_EQ(bounded(rng, 1000), e);
}

TEST(RandomTest, UniformMatchesNumpyRandom) {
  Rng rng = seven();
  EXPECT_EQ(uniform_double(rng), 0.625095466604667);
  EXPECT_EQ(uniform_double(rng), 0.8972138009695755);
  EXPECT_EQ(uniform_double(rng), 0.7756856902451935);
  EXPECT_EQ(uniform_float(rng), 0.8336510062217712f);
  EXPECT_EQ(uniform_float(rng), 0.2252071499824524f);
  EXPECT_EQ(uniform_float(rng), 0.05553156137466431f);
}

TEST(RandomTest, ShuffleMatchesNumpyPermutation) {
  Rng rng = seven();
  std::vector<std::uint64_t> v(20);
  std::iota(v.begin(), v.end(), 0);
  shuffle(rng, std::span<std::uint64_t>(v));
  EXPECT_EQ(v, (std::vector<std::uint64_t>{3, 8, 12, 13, 14, 16, 10, 15, 1, 6,
                                           0, 7, 4,  18, 5,  19, 17, 2,  9, 11}));
}

TEST(RandomTest, BoundedOfOneConsumesNothing) {
  Rng a = seven();
  Rng b = seven();
  EXPECT_EQ(bounded(a, 1), 0u);
  EXPECT_EQ(a, b);
}

TEST(RandomTest, BoundedIsUniformOverSmallRange) {
  Rng rng = seven();
  std::vector<int> counts(7, 0);
  const int n = 70000;
  for (int i = 0; i < n; ++i) ++counts[bounded(rng, 7)];
  // Each bucket expects 10000 with sd ~ 93; 6 sd is far outside chance.
  for (int c : counts) EXPECT_NEAR(c, 10000, 560);
}

TEST(RandomTest, UniformStaysInUnitInterval) {
  Rng rng = seven();
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    double u = uniform_double(rng);
    float f = uniform_float(rng);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
}

TEST(RandomTest, NormalHasUnitMomentsAndKnownAnswer) {
  Rng rng = seven();
  // The polar method on the numpy-exact doubles above: u=0.2502, v=0.7944 -> s<1.
  const double u = 2 * 0.625095466604667 - 1, v = 2 * 0.8972138009695755 - 1;
  const double s = u * u + v * v;
  ASSERT_LT(s, 1.0);
  EXPECT_DOUBLE_EQ(normal(rng), u * std::sqrt(-2.0 * std::log(s) / s));
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = normal(rng);
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.015);
}

TEST(RandomTest, BernoulliRateMatchesP) {
  Rng rng = seven();
  int hits = 0;
  for (int i = 0; i < 100000; ++i) hits += bernoulli(rng, 0.3);
  EXPECT_NEAR(hits / 100000.0, 0.3, 0.006);
}

}  // namespace
}  // namespace seedloader

namespace seedloader {
namespace {

TEST(RandomTest, ShuffleThenBoundedContinueTheNumpyStream) {
  // g.shuffle(np.arange(5)) then g.integers(0, 10) on the same Generator:
  // checks that interval() consumed exactly the words numpy consumed.
  Rng rng = seven();
  std::vector<std::uint64_t> v = {0, 1, 2, 3, 4};
  shuffle(rng, std::span<std::uint64_t>(v));
  EXPECT_EQ(v, (std::vector<std::uint64_t>{2, 0, 4, 1, 3}));
  EXPECT_EQ(bounded(rng, 10), 5u);
}

TEST(RandomTest, IntervalStaysWithinMaxInclusive) {
  Rng rng = seven();
  for (std::uint64_t max : {0ull, 1ull, 5ull, 0xFFFFFFFFull, 0x100000000ull}) {
    for (int i = 0; i < 1000; ++i) ASSERT_LE(interval(rng, max), max);
  }
}

}  // namespace
}  // namespace seedloader
