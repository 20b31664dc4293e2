// Randomness-layer benches: deriving a worker stream, raw PCG64 output rate beside
// std::mt19937_64, and one DistributedSampler epoch over 10^7 samples.
#include <benchmark/benchmark.h>

#include <random>

#include "seedloader/derive.h"
#include "seedloader/distributed_sampler.h"

namespace {

void BM_DeriveWorkerStream(benchmark::State& state) {
  std::uint64_t worker = 0;
  for (auto _ : state) {
    seedloader::Rng rng = seedloader::worker_stream(1234, 7, 3, worker++ & 63);
    benchmark::DoNotOptimize(rng);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DeriveWorkerStream);

template <typename Engine>
void fill_raw(benchmark::State& state, Engine& engine) {
  std::vector<std::uint64_t> buf(1 << 16);
  for (auto _ : state) {
    for (auto& w : buf) w = engine();
    benchmark::DoNotOptimize(buf.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * buf.size() * sizeof(std::uint64_t));
}

void BM_Pcg64Raw(benchmark::State& state) {
  seedloader::Rng rng = seedloader::worker_stream(1, 0, 0, 0);
  fill_raw(state, rng);
}
BENCHMARK(BM_Pcg64Raw);

void BM_Mt19937_64Raw(benchmark::State& state) {
  std::mt19937_64 engine(1);
  fill_raw(state, engine);
}
BENCHMARK(BM_Mt19937_64Raw);

void BM_DistributedSamplerEpoch(benchmark::State& state) {
  const std::uint64_t n = state.range(0);
  seedloader::DistributedSampler sampler(
      n, {.world_size = 8, .rank = 3, .shuffle = true, .seed = 42});
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    std::vector<seedloader::Index> idx = sampler.indices(epoch++);
    benchmark::DoNotOptimize(idx.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel("N=" + std::to_string(n) + ", world 8, shuffled");
}
BENCHMARK(BM_DistributedSamplerEpoch)->Arg(10'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
