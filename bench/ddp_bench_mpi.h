// Running Google Benchmark under mpirun: every rank runs the same benchmarks with
// fixed iteration counts (so collectives pair up), and only rank 0 reports.
#pragma once

#include <benchmark/benchmark.h>
#include <mpi.h>

#include "ddp/mpi_communicator.h"

namespace seedloader::ddp::bench {

// Discards everything (ranks other than 0).
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

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
