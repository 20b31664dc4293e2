// All-reduce bandwidth of MpiCommunicator, 1 KB to 256 MB of floats. Run it with
// `mpirun -np 2 bench/ddp_allreduce_bench`. Reported as nccl-tests defines them:
// algbw = bytes / time, busbw = algbw * 2 (n - 1) / n (n = ranks).
// Ranks meet at a barrier (untimed) before each timed all-reduce.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <vector>

#include "bench/ddp_bench_mpi.h"
#include "seedloader/ddp/mpi_communicator.h"

namespace seedloader::ddp::bench {
namespace {

void BM_MpiAllreduce(benchmark::State& state) {
  static MpiCommunicator comm;
  std::vector<float> data(static_cast<std::size_t>(state.range(0)) / sizeof(float), 1.0f);
  time_allreduce(
      state, comm.size(), [] { comm.barrier(); }, [&] { comm.allreduce(data); });
}

}  // namespace
}  // namespace seedloader::ddp::bench

int main(int argc, char** argv) {
  using namespace seedloader::ddp::bench;
  register_sizes("BM_MpiAllreduce", BM_MpiAllreduce, [](int64_t bytes) -> int64_t {
    return bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 20 : 4;
  });
  return run_benchmarks_under_mpi(argc, argv);
}
