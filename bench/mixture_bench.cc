// Mixture composition (seedloader/mixture.h): the time to allocate one global step
// of 256 samples among 3 sources, under schedules of 1, 4 and 64 points; and the
// time to compose a whole global batch (the allocation, each source's epoch
// permutation read through, the batch's shuffle). A resume from a saved state
// continues from its counts (MixtureAllocation::resume), so this per-step cost is
// paid only by queries that start from step 0.
#include <benchmark/benchmark.h>

#include "seedloader/mixture.h"

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

}  // namespace
