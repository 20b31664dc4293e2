// Per-batch overhead of the loader: a trivial dataset (one int64 per sample,
// 256 samples per batch), so what is measured is the engine itself: task
// hand-off, the worker's loop over samples, slot publication and the in-order
// wait. Reports batches/s with 2 workers beside the in-thread (num_workers = 0)
// rate. Compare with bench/torch_overhead.py (PyTorch's DataLoader, same job).
#include <benchmark/benchmark.h>

#include <optional>

#include "loader/data_loader.h"
#include "loader/in_memory_dataset.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kBatch = 256;
constexpr std::uint64_t kBatchesPerEpoch = 2000;

InMemoryDataset& trivial_dataset() {
  static InMemoryDataset ds = [] {
    InMemoryDataset d(SampleLayout({{"x", DType::kI64, {}, false}}),
                      kBatch * kBatchesPerEpoch);
    auto x = d.field<std::int64_t>(0);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int64_t>(i);
    return d;
  }();
  return ds;
}

void BM_LoaderBatches(benchmark::State& state) {
  LoaderOptions o;
  o.batch_size = kBatch;
  o.num_workers = static_cast<int>(state.range(0));
  o.prefetch = 4;
  o.seed = 1;
  o.persistent_workers = true;
  DataLoader loader(trivial_dataset(), o);
  std::uint64_t epoch = 0;
  std::optional<DataLoader::Iterator> it;
  std::int64_t checksum = 0;
  for (auto _ : state) {
    if (!it || *it == loader.end()) {
      it.reset();
      loader.set_epoch(epoch++);
      it.emplace(loader.begin());
    }
    checksum += (**it).tensor(0).values<std::int64_t>()[0];
    ++*it;
  }
  benchmark::DoNotOptimize(checksum);
  state.counters["batches_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
}

BENCHMARK(BM_LoaderBatches)->Arg(0)->Arg(2)->UseRealTime()->MinTime(2.0);

}  // namespace
}  // namespace seedloader
