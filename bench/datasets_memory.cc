// datasets_memory: what a 10^7-entry dataset index costs forked workers. One
// epoch over a PathIndex-backed dataset through the DataLoader with 2 persistent
// workers, then each worker's PSS and private memory (/proc/PID/smaps_rollup)
// beside the index size. With --torch, also runs bench/torch_memory.py (the
// same 10^7 paths as a Python list under PyTorch's DataLoader) and prints its
// figures.
//   bench/datasets_memory [--torch] [--benchmark_... flags]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "loader/datasets/path_index.h"
#include "loader/datasets/process_memory.h"
#include "seedloader/data_loader.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kEntries = 10'000'000;

// Sample i: the length of its path and its label: get() reads the index entry
// the way a real dataset's get() does before opening the file.
class PathListDataset final : public Dataset {
 public:
  PathListDataset() {
    index_.reserve(kEntries, kEntries * 20);
    char path[64];
    for (std::uint64_t i = 0; i < kEntries; ++i) {
      const int n = std::snprintf(path, sizeof path, "c%03llu/%09llu.jpg",
                                  static_cast<unsigned long long>(i % 1000),
                                  static_cast<unsigned long long>(i));
      index_.add(std::string_view(path, static_cast<std::size_t>(n)),
                 static_cast<std::int32_t>(i % 1000));
    }
    layout_ = SampleLayout({FieldSpec{"length", DType::kI64, {}, false},
                            FieldSpec{"label", DType::kI64, {}, false}});
  }
  std::uint64_t size() const override { return index_.size(); }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t i, Rng&, SampleWriter& out) const override {
    out.field<std::int64_t>(0)[0] =
        static_cast<std::int64_t>(std::strlen(index_.path(i)));
    out.field<std::int64_t>(1)[0] = index_.label(i);
  }
  std::string describe() const override { return "PathListDataset"; }
  std::uint64_t index_bytes() const { return index_.bytes(); }

 private:
  PathIndex index_;
  SampleLayout layout_;
};

void BM_IndexMemoryInForkedWorkers(benchmark::State& state) {
  const PathListDataset dataset;
  LoaderOptions opt;
  opt.batch_size = 4096;
  opt.num_workers = 2;
  opt.seed = 1;
  opt.persistent_workers = true;
  DataLoader loader(dataset, opt);
  double pss = 0, priv = 0;
  std::uint64_t samples = 0;
  for (auto _ : state) {
    for (const Batch& b : loader) samples += b.size();
    pss = priv = 0;
    for (pid_t pid : loader.worker_pids()) {  // still alive: persistent workers
      const ProcessMemory m = read_process_memory(pid);
      pss += m.pss_bytes / 1e6 / 2;
      priv += m.private_bytes / 1e6 / 2;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(samples));
  state.counters["index_MB"] = dataset.index_bytes() / 1e6;
  state.counters["worker_pss_MB"] = pss;
  state.counters["worker_private_MB"] = priv;
}
BENCHMARK(BM_IndexMemoryInForkedWorkers)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace seedloader

int main(int argc, char** argv) {
  bool torch = false;
  for (int i = 1; i < argc; ++i) torch = torch || std::strcmp(argv[i], "--torch") == 0;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (torch) {
    std::fflush(stdout);
    const std::string cmd = std::string("/usr/bin/python3 ") + SEEDLOADER_SOURCE_DIR +
                            "/bench/torch_memory.py 10000000";
    return std::system(cmd.c_str()) == 0 ? 0 : 1;
  }
  return 0;
}
