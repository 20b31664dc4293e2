// Does bucketed all-reduce hide communication behind backward? One training step
// (forward, MSE, backward) of an MLP with ~10.2 M parameters on the CPU, in three
// ways, run with `mpirun -np 2 bench/ddp_overlap_bench`:
//   ComputeOnly      no communication (the floor)
//   BlockingAfter    backward, then one blocking all-reduce of all gradients
//   Overlapped/cap   the Reducer's buckets (first cap 1 MB, then `cap` MB), each
//                    started as soon as backward has produced it
// hidden = (BlockingAfter - Overlapped) / (BlockingAfter - ComputeOnly) is the share
// of communication time the overlap hides (target >= 0.5).
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "bench/ddp_bench_mpi.h"
#include "seedloader/ddp/layers.h"
#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/reducer.h"
#include "seedloader/ddp/sequential.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"

namespace seedloader::ddp::bench {
namespace {

constexpr int64_t kBatch = 32;
constexpr int kIterations = 20;

std::unique_ptr<Sequential> make_mlp() {
  // 1024*2048 + 2048*2048 + 2048*1536 + 1536*512 weights: ~10.2 M parameters.
  const int64_t dims[] = {1024, 2048, 2048, 1536, 512};
  std::vector<std::unique_ptr<Layer>> layers;
  for (int i = 0; i < 4; ++i) {
    layers.push_back(std::make_unique<Linear>(dims[i], dims[i + 1]));
    if (i < 3) layers.push_back(std::make_unique<ReLU>());
  }
  Rng rng{SeedSequence(5)};
  return std::make_unique<Sequential>(std::move(layers), Device::kCpu, rng);
}

MpiCommunicator& comm() {
  static MpiCommunicator c;
  return c;
}

struct Step {
  std::unique_ptr<Sequential> model = make_mlp();
  std::vector<float> x, y, dy;
  Step() {
    Rng rng{SeedSequence(6)};
    x.resize(kBatch * 1024);
    y.resize(kBatch * 512);
    dy.resize(y.size());
    for (auto& v : x) v = static_cast<float>(normal(rng));
    for (auto& v : y) v = static_cast<float>(normal(rng));
  }
  void run() {
    model->zero_grad();
    const float* out = model->forward(x.data(), {kBatch, 1024});
    mse_loss(model->context(), out, y.data(), dy.data(), int64_t(y.size()));
    model->backward(dy.data());
  }
};

void report(benchmark::State& state, const Step& s) {
  state.counters["params_M"] = double(s.model->parameters().size()) / 1e6;
  state.counters["grad_MB"] = double(s.model->gradients().size() * 4) / 1e6;
}

void BM_ComputeOnly(benchmark::State& state) {
  Step s;
  comm().barrier();
  for (auto _ : state) s.run();
  report(state, s);
}

void BM_BlockingAfter(benchmark::State& state) {
  Step s;
  comm().barrier();
  for (auto _ : state) {
    s.run();
    comm().allreduce_average(s.model->gradients());
  }
  report(state, s);
}

void BM_Overlapped(benchmark::State& state) {
  Step s;
  const auto cap = static_cast<std::size_t>(state.range(0)) << 20;
  Reducer reducer(*s.model, comm(), ReducerOptions{std::size_t{1} << 20, cap});
  comm().barrier();
  for (auto _ : state) s.run();
  report(state, s);
  state.counters["buckets"] = double(reducer.buckets().size());
  state.counters["started_early"] = double(reducer.buckets_started_early());
}

BENCHMARK(BM_ComputeOnly)
    ->Iterations(kIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BlockingAfter)
    ->Iterations(kIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Overlapped)
    ->Arg(25)
    ->Arg(4)
    ->Iterations(kIterations)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace seedloader::ddp::bench

int main(int argc, char** argv) {
  return seedloader::ddp::bench::run_benchmarks_under_mpi(argc, argv);
}
