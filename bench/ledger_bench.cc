// The ledger (seedloader/ledger.h): the time to answer "which samples did step K
// train on" over 10^6 and 10^8 samples, for step 1 and a step near the epoch's end
// (10^5 and 10^7). The
// answer is computed from the configuration (one epoch's order, then the step's
// slice), so both take the same time: a query never replays the steps before it.
#include <benchmark/benchmark.h>

#include "seedloader/ledger.h"

namespace {

void BM_LedgerStep(benchmark::State& state) {
  seedloader::LedgerQuery q;
  q.options.batch_size = 8;
  q.options.num_workers = 8;
  q.options.shuffle = true;
  q.options.seeding = seedloader::SeedScope::kSample;
  q.dataset_size = static_cast<std::uint64_t>(state.range(0));  // steps of 8
  q.seed = 1;
  q.epoch = 3;
  q.first_step = static_cast<std::uint64_t>(state.range(1));
  q.end_step = q.first_step + 1;
  for (auto _ : state) {
    auto entries = seedloader::ledger(q);
    benchmark::DoNotOptimize(entries.data());
  }
}
BENCHMARK(BM_LedgerStep)
    ->Args({1'000'000, 1})
    ->Args({1'000'000, 100'000})
    ->Args({100'000'000, 1})
    ->Args({100'000'000, 10'000'000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
