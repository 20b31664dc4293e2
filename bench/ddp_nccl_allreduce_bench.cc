// All-reduce bandwidth of NcclCommunicator on device buffers, 1 KB to 256 MB. Run it
// with `mpirun -np <gpus> bench/ddp_nccl_allreduce_bench` (one process per GPU; one
// process works too). algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <memory>

#include "bench/ddp_bench_mpi.h"
#include "ddp/device.h"
#include "ddp/nccl_communicator.h"

namespace seedloader::ddp::bench {
namespace {

void BM_NcclAllreduce(benchmark::State& state) {
  static MpiCommunicator mpi;
  static NcclCommunicator nccl(mpi);
  const auto bytes = static_cast<std::size_t>(state.range(0));
  DeviceArray<float> data(Device::kCuda, bytes / sizeof(float));
  double seconds = 0;
  for (auto _ : state) {
    nccl.barrier();
    const double start = MPI_Wtime();
    nccl.allreduce(data.span());
    const double elapsed = MPI_Wtime() - start;
    seconds += elapsed;
    state.SetIterationTime(elapsed);
  }
  const double n = nccl.size();
  const double algbw = double(bytes) * double(state.iterations()) / seconds;
  state.counters["algbw_GBps"] = algbw / 1e9;
  state.counters["busbw_GBps"] = algbw * (n > 1 ? 2 * (n - 1) / n : 1.0) / 1e9;
  state.counters["ranks"] = n;
}

// One registration per size: Google Benchmark's iteration count is per benchmark,
// and it must be the same on every rank (the timed loop is a collective).
void register_sizes() {
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{256} << 20); bytes *= 4) {
    const int64_t iters = bytes <= (1 << 20) ? 100 : 20;
    benchmark::RegisterBenchmark("BM_NcclAllreduce", BM_NcclAllreduce)
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
