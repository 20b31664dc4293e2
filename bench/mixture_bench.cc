// Mixture composition (seedloader/mixture.h): the time to allocate one global step
// of 256 samples among 3 sources, under schedules of 1, 4 and 64 points; and the
// time to compose a whole global batch (the allocation, each source's epoch
// permutation read through, the batch's shuffle). A resume from a saved state
// continues from its counts (MixtureAllocation::resume), so this per-step cost is
// paid only by queries that start from step 0. And the time to compute one rank's
// order of a whole loader epoch (1000 steps) after a resume at epoch 0 and at epoch
// 10^4 (step 10^7), given the counts a saved state holds: the same; and at epoch
// 10^4 without them, advancing the allocation from step 0.
#include <benchmark/benchmark.h>

#include "seedloader/mixture.h"
#include "seedloader/mixture_dataset.h"

namespace {

seedloader::MixtureSchedule schedule(int points) {
  std::vector<seedloader::WeightPoint> p;
  for (int i = 0; i < points; ++i)
    p.push_back({static_cast<std::uint64_t>(i) * 1000, {1.0 + i % 3, 2.0, 0.5 + i % 2}});
  return seedloader::MixtureSchedule({"web", "books", "code"}, p);
}

void BM_MixtureAllocationStep(benchmark::State& state) {
  seedloader::MixtureAllocation a(schedule(static_cast<int>(state.range(0))), 256);
  for (auto _ : state) benchmark::DoNotOptimize(a.next());
}
BENCHMARK(BM_MixtureAllocationStep)
    ->Arg(1)
    ->Arg(4)
    ->Arg(64)
    ->Unit(benchmark::kNanosecond);

void BM_MixtureGlobalBatch(benchmark::State& state) {
  seedloader::MixturePlan plan(seedloader::MixtureAllocation(schedule(4), 256),
                               {1'000'000, 50'000, 3'000}, 7);
  for (auto _ : state) benchmark::DoNotOptimize(plan.next());
}
BENCHMARK(BM_MixtureGlobalBatch)->Unit(benchmark::kMicrosecond);

void BM_MixtureResumedEpoch(benchmark::State& state) {
  const std::uint64_t epoch = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::string> names = {"web", "books", "code"};
  const std::vector<std::uint64_t> sizes = {1'000'000, 50'000, 3'000};
  const std::vector<seedloader::MixtureSegment> history = {{0, schedule(4), {}}};
  constexpr std::uint64_t kPerEpoch = 256 * 1000;  // 1000 steps of G = 256
  // The counts at the epoch's first step, as state_dict() saves them (computed
  // once here by advancing from step 0, outside the timing).
  const std::vector<std::uint64_t> counts =
      seedloader::MixtureSampler(names, sizes, history, kPerEpoch, 32, 8, 3, 7)
          .consumed_at(epoch * 1000);
  for (auto _ : state) {
    const seedloader::MixtureSampler resumed(names, sizes, history, kPerEpoch, 32, 8, 3,
                                             7, {{epoch * 1000, counts}});
    benchmark::DoNotOptimize(resumed.order(epoch));
  }
}
BENCHMARK(BM_MixtureResumedEpoch)->Arg(0)->Arg(10'000)->Unit(benchmark::kMillisecond);

// The same epoch without the saved counts: the allocation advanced from step 0.
void BM_MixtureEpochFromStepZero(benchmark::State& state) {
  const std::uint64_t epoch = static_cast<std::uint64_t>(state.range(0));
  const std::vector<seedloader::MixtureSegment> history = {{0, schedule(4), {}}};
  for (auto _ : state) {
    const seedloader::MixtureSampler fresh({"web", "books", "code"},
                                           {1'000'000, 50'000, 3'000}, history,
                                           256 * 1000, 32, 8, 3, 7);
    benchmark::DoNotOptimize(fresh.order(epoch));
  }
}
BENCHMARK(BM_MixtureEpochFromStepZero)->Arg(10'000)->Unit(benchmark::kMillisecond);

}  // namespace
