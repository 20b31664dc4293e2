// Running Google Benchmark under mpirun: every rank runs the same benchmarks with
// fixed iteration counts (so collectives pair up), and only rank 0 reports.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "seedloader/ddp/mpi_communicator.h"

namespace seedloader::ddp::bench {

// Discards everything (ranks other than 0).
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// Times `allreduce` (each iteration after an untimed `barrier`) and reports algbw
// and busbw as nccl-tests defines them for `ranks` ranks.
template <typename Barrier, typename Allreduce>
void time_allreduce(benchmark::State& state, int ranks, Barrier barrier,
                    Allreduce allreduce) {
  const auto bytes = static_cast<double>(state.range(0));
  double seconds = 0;
  for (auto _ : state) {
    barrier();
    const double start = MPI_Wtime();
    allreduce();
    const double elapsed = MPI_Wtime() - start;
    seconds += elapsed;
    state.SetIterationTime(elapsed);
  }
  const double n = ranks;
  const double algbw = bytes * double(state.iterations()) / seconds;
  state.counters["algbw_GBps"] = algbw / 1e9;
  state.counters["busbw_GBps"] = algbw * (n > 1 ? 2 * (n - 1) / n : 1.0) / 1e9;
  state.counters["ranks"] = n;
}

// Registers `fn` once per size from 1 KB to 256 MB (x4): Google Benchmark's
// iteration count is per benchmark, and it must be the same on every rank (the
// timed loop is a collective). `iterations(bytes)` picks it.
template <typename Fn, typename Iterations>
void register_sizes(const char* name, Fn fn, Iterations iterations) {
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{256} << 20); bytes *= 4) {
    benchmark::RegisterBenchmark(name, fn)
        ->Arg(bytes)
        ->Iterations(iterations(bytes))
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

inline int run_benchmarks_under_mpi(int argc, char** argv) {
  auto session = MpiSession::acquire();
  benchmark::Initialize(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}

}  // namespace seedloader::ddp::bench
