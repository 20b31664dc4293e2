// train_modes_bench: step time of ddp-train's DataParallel mode (one process,
// replicas on threads) against a DDP rank doing the same work (the whole batch,
// one model), on the same small CNN and batch. Samples/s are per step's batch.
//   build/default/bench/train_modes_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"
#include "tools/ddp_train/data_parallel_model.h"
#include "tools/ddp_train/train_model.h"

namespace {

using namespace seedloader;

constexpr std::int64_t kRows = 64;

struct Work {
  std::vector<float> x = std::vector<float>(kRows * 3 * 32 * 32);
  std::vector<std::int32_t> labels = std::vector<std::int32_t>(kRows);
  Work() {
    Rng rng{SeedSequence(1)};
    for (float& v : x) v = static_cast<float>(uniform(rng, 0.0, 1.0));
    for (auto& l : labels) l = static_cast<std::int32_t>(bounded(rng, 10));
  }
};

ddp::MpiCommunicator& comm() {
  static ddp::MpiCommunicator c;
  return c;
}

void run(benchmark::State& state, train::TrainModel& model) {
  Work w;
  for (auto _ : state) {
    train::StepStats s =
        model.step(w.x.data(), {kRows, 3, 32, 32}, {.labels = w.labels.data()});
    benchmark::DoNotOptimize(s.loss_sum);
  }
  state.counters["samples/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kRows), benchmark::Counter::kIsRate);
}

void BM_DdpRankStep(benchmark::State& state) {
  train::TrainOptions o;
  o.model = "cnn:small";
  auto model = train::make_train_model(o, {3, 32, 32}, ddp::Device::kCpu, &comm(), 1);
  run(state, *model);
}

void BM_DataParallelStep(benchmark::State& state) {
  train::TrainOptions o;
  o.model = "cnn:small";
  o.mode = train::Mode::kDataParallel;
  for (int d = 0; d < state.range(0); ++d) o.devices.push_back(d);
  train::DataParallelModel model(o, {3, 32, 32}, 1);
  run(state, model);
}

BENCHMARK(BM_DdpRankStep)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DataParallelStep)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
