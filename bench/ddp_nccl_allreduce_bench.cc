// All-reduce bandwidth of NcclCommunicator on device buffers, 1 KB to 256 MB. Run it
// with `mpirun -np <gpus> bench/ddp_nccl_allreduce_bench` (one process per GPU; one
// process works too). algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <memory>

#include "bench/ddp_bench_mpi.h"
#include "seedloader/ddp/device.h"
#include "seedloader/ddp/nccl_communicator.h"

namespace seedloader::ddp::bench {
namespace {

void BM_NcclAllreduce(benchmark::State& state) {
  static MpiCommunicator mpi;
  static NcclCommunicator nccl(mpi);
  DeviceArray<float> data(Device::kCuda,
                          static_cast<std::size_t>(state.range(0)) / sizeof(float));
  time_allreduce(
      state, nccl.size(), [] { nccl.barrier(); }, [&] { nccl.allreduce(data.span()); });
}

}  // namespace
}  // namespace seedloader::ddp::bench

int main(int argc, char** argv) {
  using namespace seedloader::ddp::bench;
  register_sizes("BM_NcclAllreduce", BM_NcclAllreduce,
                 [](int64_t bytes) -> int64_t { return bytes <= (16 << 20) ? 100 : 20; });
  return run_benchmarks_under_mpi(argc, argv);
}
