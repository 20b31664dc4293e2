// Mixture composition: over random schedules (paused and returning sources, weights
// that change often), every step's counts sum to G, no source's count falls, and
// every source stays within one sample of its target, computed here independently
// in long double from the weights; a resume from saved counts continues exactly;
// each source is read without repeats within its own epochs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/mixture.h"
#include "seedloader/random.h"

namespace seedloader {
namespace {

std::vector<std::string> names(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < n; ++s) out.push_back("source" + std::to_string(s));
  return out;
}

// A schedule of `sources` sources over `steps` steps: a new point with probability
// 1/5 a step; each weight cubed (so shares range widely), 0 for a fifth of them.
MixtureSchedule random_schedule(std::size_t sources, std::uint64_t steps, Rng& rng) {
  std::vector<WeightPoint> points;
  for (std::uint64_t step = 0; step < steps; ++step) {
    if (step > 0 && bounded(rng, 5) != 0) continue;
    WeightPoint p{step, {}};
    for (std::size_t s = 0; s < sources; ++s) {
      const double u = uniform_double(rng);
      p.weights.push_back(bounded(rng, 5) == 0 ? 0.0 : u * u * u);
    }
    if (std::all_of(p.weights.begin(), p.weights.end(), [](double w) { return w == 0; }))
      p.weights[bounded(rng, sources)] = 1.0;
    points.push_back(std::move(p));
  }
  return MixtureSchedule(names(sources), std::move(points));
}

// Source s's share of step t, from the weights, in long double.
long double share(const MixtureSchedule& m, std::size_t s, std::uint64_t t) {
  const WeightPoint* in = nullptr;
  for (const WeightPoint& p : m.points())
    if (p.step <= t) in = &p;
  long double total = 0;
  for (const double w : in->weights) total += w;
  return in->weights[s] / total;
}

TEST(MixtureTest, EveryStepSumsToGNoCountFallsAndEverySourceStaysWithinOne) {
  Rng rng = stream_for_key(2026, {99});
  long double worst = 0;
  std::uint64_t exact_worst = 0;  // in units of 2^-40
  for (std::size_t sources = 1; sources <= 8; ++sources) {
    for (const std::uint64_t g : {1u, 3u, 8u, 256u}) {
      for (int trial = 0; trial < 6; ++trial) {
        const std::uint64_t steps = g == 256 ? 300 : 1500;
        const MixtureSchedule schedule = random_schedule(sources, steps, rng);
        MixtureAllocation a(schedule, g);
        std::vector<long double> target(sources, 0);
        // And exactly, in the proportions' units.
        std::vector<unsigned __int128> units(sources, 0);
        for (std::uint64_t step = 0; step < steps; ++step) {
          const std::vector<std::uint64_t> before = a.consumed();
          const std::vector<std::uint64_t> counts = a.next();
          std::uint64_t sum = 0;
          for (std::size_t s = 0; s < sources; ++s) {
            sum += counts[s];
            ASSERT_LE(counts[s], g) << "a count fell (wrapped below 0)";
            ASSERT_GE(a.consumed()[s], before[s]);
            ASSERT_EQ(a.consumed()[s], before[s] + counts[s]);
            target[s] += g * share(schedule, s, step);
            units[s] += static_cast<unsigned __int128>(g) * schedule.proportions(step)[s];
            const unsigned __int128 have =
                static_cast<unsigned __int128>(a.consumed()[s]) * kMixtureUnit;
            ASSERT_TRUE(have < units[s] + kMixtureUnit && units[s] < have + kMixtureUnit)
                << "source " << s << " of " << sources << ", G " << g << ", step "
                << step;
            const unsigned __int128 gap =
                have > units[s] ? have - units[s] : units[s] - have;
            exact_worst = std::max(exact_worst, static_cast<std::uint64_t>(gap));
            const long double off = std::fabs(a.consumed()[s] - target[s]);
            worst = std::max(worst, off);
            ASSERT_LT(off, 1.0L + 1e-6L) << "source " << s << " of " << sources << ", G "
                                         << g << ", step " << step;
          }
          ASSERT_EQ(sum, g) << "step " << step;
        }
      }
    }
  }
  std::printf(
      "largest distance from a target: 1 - %llu x 2^-40 samples (%.6Lf from the "
      "weights)\n",
      static_cast<unsigned long long>(kMixtureUnit - exact_worst), worst);
}

TEST(MixtureTest, APausedSourceKeepsItsCountAndASourceAtWeightZeroNeverStarts) {
  // a and b half each for 10 steps, b alone for 10, then a and b again.
  const MixtureSchedule m({"a", "b", "c"},
                          {{0, {1, 1, 0}}, {10, {0, 1, 0}}, {20, {1, 1, 0}}});
  MixtureAllocation a(m, 4);
  a.advance_to(10);
  EXPECT_EQ(a.consumed(), (std::vector<std::uint64_t>{20, 20, 0}));
  a.advance_to(20);
  EXPECT_EQ(a.consumed(), (std::vector<std::uint64_t>{20, 60, 0}));
  a.advance_to(30);
  EXPECT_EQ(a.consumed(), (std::vector<std::uint64_t>{40, 80, 0}));
}

TEST(MixtureTest, AResumeFromSavedCountsContinuesExactly) {
  Rng rng = stream_for_key(7, {1});
  const MixtureSchedule schedule = random_schedule(5, 400, rng);
  MixtureAllocation whole(schedule, 16);
  std::vector<std::vector<std::uint64_t>> want;
  for (int step = 0; step < 400; ++step) want.push_back(whole.next());
  MixtureAllocation first(schedule, 16);
  first.advance_to(137);
  MixtureAllocation resumed(schedule, 16);
  resumed.resume(137, first.consumed());
  for (int step = 137; step < 400; ++step) ASSERT_EQ(resumed.next(), want[step]) << step;
  // Counts that are not the allocation's are refused, naming the source.
  std::vector<std::uint64_t> moved = first.consumed();
  moved[0] += 2;
  moved[1] -= 2;
  MixtureAllocation wrong(schedule, 16);
  try {
    wrong.resume(137, moved);
    FAIL() << "counts 2 samples off were taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("samples of source 'source0'"),
              std::string::npos)
        << e.what();
  }
  moved = first.consumed();
  moved[0] += 1;
  EXPECT_THROW(wrong.resume(137, moved), ConfigError);
  EXPECT_THROW(wrong.resume(137, {1, 2}), ConfigError);
}

TEST(MixtureTest, NewWeightsAtAResumeApplyFromThereWithinOneOfTheirIntegral) {
  const MixtureSchedule before({"web", "curated"}, {{0, {0.9, 0.1}}});
  MixtureAllocation a(before, 32);
  a.advance_to(50);  // 1440 and 160
  EXPECT_EQ(a.consumed(), (std::vector<std::uint64_t>{1440, 160}));
  // Annealing on the curated source from step 50: 0.3 / 0.7.
  const MixtureSchedule after({"web", "curated"}, {{0, {0.3, 0.7}}});
  MixtureAllocation resumed(after, 32, 50, a.consumed());
  for (std::uint64_t step = 50; step < 80; ++step) {
    resumed.next();
    const long double web = 1440 + 32 * 0.3L * (step + 1 - 50);
    // (Proportions are multiples of 2^-40: 0.3 is a hair off.)
    EXPECT_LT(std::fabs(resumed.consumed()[0] - web), 1.0L + 1e-6L) << step;
  }
  EXPECT_EQ(resumed.consumed()[0] + resumed.consumed()[1], 80u * 32);
}

TEST(MixtureTest, EachSourceIsReadWithoutRepeatsWithinItsEpochs) {
  // A small source (7 samples) beside a large one (500), 1 to 3, G = 8: over 120
  // steps the small one goes through about 34 epochs, the large one about 1.4.
  const MixtureSchedule m({"small", "large"}, {{0, {1, 3}}});
  MixturePlan plan(MixtureAllocation(m, 8), {7, 500}, 11);
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::multiset<std::uint64_t>> read;
  std::vector<std::vector<MixtureSample>> batches;
  for (int step = 0; step < 120; ++step) {
    batches.push_back(plan.next());
    ASSERT_EQ(batches.back().size(), 8u);
    for (const MixtureSample& x : batches.back())
      read[{x.source, x.epoch}].insert(x.index);
  }
  const std::vector<std::uint64_t> consumed = plan.allocation().consumed();
  EXPECT_EQ(consumed[0] + consumed[1], 960u);
  for (const auto& [key, indices] : read) {
    const auto& [source, epoch] = key;
    const std::uint64_t size = source == 0 ? 7 : 500;
    EXPECT_EQ(std::set<std::uint64_t>(indices.begin(), indices.end()).size(),
              indices.size())
        << "source " << source << " epoch " << epoch;
    if ((epoch + 1) * size <= consumed[source]) EXPECT_EQ(indices.size(), size);
    for (const std::uint64_t i : indices) EXPECT_LT(i, size);
  }
  EXPECT_GE(read.size(), 30u);
  // Another seed reads other orders; the same seed, from a resumed allocation, the
  // same batches.
  MixturePlan other(MixtureAllocation(m, 8), {7, 500}, 12);
  EXPECT_NE(other.next(), batches[0]);
  MixtureAllocation first(m, 8);
  first.advance_to(60);
  MixtureAllocation continued(m, 8);
  continued.resume(60, first.consumed());
  MixturePlan resumed(std::move(continued), {7, 500}, 11);
  for (int step = 60; step < 120; ++step)
    ASSERT_EQ(resumed.next(), batches[step]) << step;
}

TEST(MixtureTest, ASourcesEpochIsTheNumpyPermutationOfItsKey) {
  const MixtureSchedule m({"only"}, {{0, {1}}});
  MixturePlan plan(MixtureAllocation(m, 5), {10}, 3);
  // FNV-1a of "only", shifted right by one, and numpy's
  // Generator(PCG64(SeedSequence(3, spawn_key=(4, that, 1)))).permutation(10).
  EXPECT_EQ(source_key("only"), 258655000320288091u);
  const std::vector<std::uint64_t> numpy{8, 9, 6, 2, 0, 3, 5, 4, 7, 1};
  for (std::uint64_t k = 0; k < 10; ++k) {
    EXPECT_EQ(plan.at(0, 10 + k).index, numpy[k]);
    EXPECT_EQ(plan.at(0, 10 + k).epoch, 1u);
  }
}

TEST(MixtureTest, ProportionsSumToTheUnitAndHugeWeightsStillSplitByWeight) {
  // Weights whose sum overflows a double are still proportions: 1 to 3.
  const MixtureSchedule m({"a", "b", "c"}, {{0, {0.5e308, 1.5e308, 0}}, {4, {2, 0, 1}}});
  for (const std::uint64_t step : {0u, 9u}) {
    const auto p = m.proportions(step);
    EXPECT_EQ(p[0] + p[1] + p[2], kMixtureUnit);
  }
  EXPECT_EQ(m.proportions(0)[0], kMixtureUnit / 4);
  EXPECT_EQ(m.proportions(0)[2], 0u);
  EXPECT_EQ(m.proportions(9)[1], 0u);
  EXPECT_NEAR(static_cast<double>(m.proportions(9)[0]) / kMixtureUnit, 2.0 / 3, 1e-12);
}

TEST(MixtureTest, BadSchedulesAreRefusedNamingThePointAndTheSource) {
  const auto error = [](std::vector<std::string> sources,
                        std::vector<WeightPoint> points) {
    try {
      MixtureSchedule m(std::move(sources), std::move(points));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({}, {{0, {}}}), "a mixture needs at least one source");
  EXPECT_EQ(error({"a", "a"}, {{0, {1, 1}}}), "the mixture names source 'a' twice");
  EXPECT_EQ(error({"a"}, {}), "a mixture's weights are missing");
  EXPECT_EQ(error({"a"}, {{5, {1}}}),
            "a mixture's weights must start at step 0, not at step 5");
  EXPECT_EQ(error({"a"}, {{0, {1}}, {0, {2}}}),
            "a mixture's weight steps must increase: step 0 follows step 0");
  EXPECT_EQ(error({"a", "b"}, {{0, {1}}}), "the weights from step 0 are 1 for 2 sources");
  EXPECT_NE(error({"a", "b"}, {{0, {1, 1}}, {9, {1, -1}}})
                .find("the weights from step 9 give source 'b' weight -1"),
            std::string::npos);
  EXPECT_NE(error({"a"}, {{0, {NAN}}}).find("give source 'a' weight nan"),
            std::string::npos);
  EXPECT_EQ(error({"a", "b"}, {{0, {0, 0}}}),
            "the weights from step 0 are all 0: no source to draw from");
  EXPECT_THROW(MixtureAllocation(MixtureSchedule({"a"}, {{0, {1}}}), 0), ConfigError);
  EXPECT_THROW(MixtureAllocation(MixtureSchedule({"a"}, {{0, {1}}}), 4, 3, {1, 2}),
               ConfigError);
  EXPECT_THROW(
      MixturePlan(MixtureAllocation(MixtureSchedule({"a"}, {{0, {1}}}), 4), {0}, 1),
      ConfigError);
}

// Interpolated weights: a ramp of 100 steps from all "a" to all "b" is exact per
// step (the weights at step t are the linear blend), a ramp of 10^6 steps at most
// 4096 stairs, the counts stay within one of the ramp's integral, and the schedule keeps
// the points as given.
TEST(MixtureTest, InterpolatedWeightsRampLinearlyBetweenPoints) {
  const MixtureSchedule ramp(names(2), {{0, {1, 0}}, {100, {0, 1}}}, true);
  EXPECT_TRUE(ramp.interpolated());
  EXPECT_EQ(ramp.given_points().size(), 2u);
  EXPECT_EQ(ramp.points().size(), 101u);
  for (const std::uint64_t t : {0u, 25u, 50u, 99u, 100u, 500u}) {
    const long double want_b = t >= 100 ? 1.0L : t / 100.0L;
    EXPECT_NEAR(static_cast<long double>(ramp.proportions(t)[1]) / kMixtureUnit, want_b,
                1e-9L)
        << "step " << t;
  }
  EXPECT_FALSE(ramp.same_as(MixtureSchedule(names(2), {{0, {1, 0}}, {100, {0, 1}}})));
  EXPECT_TRUE(
      ramp.same_as(MixtureSchedule(names(2), {{0, {1, 0}}, {100, {0, 1}}}, true)));

  const MixtureSchedule long_ramp(names(2), {{0, {3, 1}}, {1'000'000, {1, 3}}}, true);
  EXPECT_LE(long_ramp.points().size(), kMaxStairs + 1);  // stairs of 245 steps
  EXPECT_GT(long_ramp.points().size(), kMaxStairs - 245);
  MixtureAllocation a(ramp, 16);
  long double target = 0;
  for (std::uint64_t step = 0; step < 200; ++step) {
    a.next();
    target += 16 * (step >= 100 ? 1.0L : step / 100.0L);
    EXPECT_LT(std::fabs(static_cast<long double>(a.consumed()[1]) - target), 1.0L)
        << "step " << step;
  }
}

}  // namespace
}  // namespace seedloader
