// All-reduce bandwidth of MpiCommunicator, 1 KB to 256 MB of floats. Run it with
// `mpirun -np 2 bench/ddp_allreduce_bench`. Reported as nccl-tests defines them:
// algbw = bytes / time, busbw = algbw * 2 (n - 1) / n (n = ranks).
// Ranks meet at a barrier (untimed) before each timed all-reduce.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <vector>

#include "bench/ddp_bench_mpi.h"
#include "ddp/mpi_communicator.h"

namespace seedloader::ddp::bench {
namespace {

void BM_MpiAllreduce(benchmark::State& state) {
  static MpiCommunicator comm;
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<float> data(bytes / sizeof(float), 1.0f);
  double seconds = 0;
  for (auto _ : state) {
    comm.barrier();
    const double start = MPI_Wtime();
    comm.allreduce(data);
    const double elapsed = MPI_Wtime() - start;
    seconds += elapsed;
    state.SetIterationTime(elapsed);
  }
  const double n = comm.size();
  const double algbw = double(bytes) * double(state.iterations()) / seconds;
  state.counters["algbw_GBps"] = algbw / 1e9;
  state.counters["busbw_GBps"] = algbw * (n > 1 ? 2 * (n - 1) / n : 1.0) / 1e9;
  state.counters["ranks"] = n;
  state.SetBytesProcessed(int64_t(bytes) * state.iterations());
}

// One registration per size: Google Benchmark's iteration count is per benchmark,
// and it must be the same on every rank (the timed loop is a collective).
void register_sizes() {
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{256} << 20); bytes *= 4) {
    const int64_t iters = bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 4;
    benchmark::RegisterBenchmark("BM_MpiAllreduce", BM_MpiAllreduce)
        ->Arg(bytes)
        ->Iterations(iters)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace seedloader::ddp::bench

int main(int argc, char** argv) {
  seedloader::ddp::bench::register_sizes();
  return seedloader::ddp::bench::run_benchmarks_under_mpi(argc, argv);
}
