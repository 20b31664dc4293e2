// Per-batch overhead of the loader: a trivial dataset (one int64 per sample,
// 256 samples per batch), so what is measured is the engine itself: task
// hand-off, the worker's loop over samples, slot publication and the in-order
// wait. Reports batches/s with 2 workers beside the in-thread (num_workers = 0)
// rate. Compare with bench/torch_overhead.py (PyTorch's DataLoader, same job).
// Also the round-trip latency of one slot hand-off between two processes, and the
// cost of resuming an elastic epoch near its end against at its start.
#include <benchmark/benchmark.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <new>
#include <string>

#include "bench/batch_stream.h"
#include "loader/shared_region.h"
#include "loader/slot_state.h"
#include "seedloader/data_loader.h"
#include "seedloader/in_memory_dataset.h"

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
  BatchStream batches(loader);
  std::int64_t checksum = 0;
  for (auto _ : state) checksum += batches.next().tensor(0).values<std::int64_t>()[0];
  benchmark::DoNotOptimize(checksum);
  state.counters["batches_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBatch));
}

BENCHMARK(BM_LoaderBatches)->Arg(0)->Arg(2)->UseRealTime()->MinTime(2.0);

// Ten million samples, each its own index, stored nowhere.
class IndexDataset final : public Dataset {
 public:
  explicit IndexDataset(std::uint64_t n) : n_(n) {}
  std::uint64_t size() const override { return n_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng&, SampleWriter& out) const override {
    out.field<std::int64_t>(0)[0] = static_cast<std::int64_t>(index);
  }
  std::string describe() const override { return "IndexDataset"; }

 private:
  std::uint64_t n_;
  SampleLayout layout_{{{"x", DType::kI64, {}, false}}};
};

// From resume() to the first batch, on rank 1 of 4 under the elastic partition
// over 10^7 samples, at 0% and at 99% of the epoch: the epoch's order is drawn
// whole either way, and no batch before the position is loaded, so the two
// should cost the same.
void BM_ElasticResumeToFirstBatch(benchmark::State& state) {
  static const IndexDataset data(10'000'000);
  LoaderOptions o;
  o.batch_size = 64;
  o.num_workers = 2;
  o.shuffle = true;
  o.seed = 1;
  o.persistent_workers = true;
  o.seeding = SeedScope::kSample;
  o.partition = Partition::kElastic;
  o.rank = 1;
  o.world_size = 4;
  DataLoader loader(data, o);
  const std::uint64_t at =
      loader.num_batches() * static_cast<std::uint64_t>(state.range(0)) / 100;
  std::int64_t checksum = 0;
  for (auto _ : state) {
    loader.resume(0, at);
    auto it = loader.begin();
    checksum += it->tensor(0).values<std::int64_t>()[0];
  }
  benchmark::DoNotOptimize(checksum);
  state.counters["batch"] = static_cast<double>(at);
}

BENCHMARK(BM_ElasticResumeToFirstBatch)
    ->Arg(0)
    ->Arg(99)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// Round trip of one slot hand-off between two processes: main publishes kTask,
// a forked echo process answers kReady, main publishes kFree. The latency
// floor under every batch.
void BM_SlotRoundTrip(benchmark::State& state) {
  SharedRegion region(4096);
  auto* word = new (region.base()) SlotWord(kFree);
  auto* stop = new (region.base() + 64) std::atomic<std::uint32_t>(0);
  pid_t echo = fork();
  if (echo == 0) {
    for (;;) {
      std::uint32_t s = wait_slice(
          *word, [](std::uint32_t v) { return v == kTask; },
          std::chrono::microseconds(100000));
      if (stop->load(std::memory_order_relaxed) != 0) _exit(0);
      if (s == kTask) publish(*word, kReady);
    }
  }
  for (auto _ : state) {
    publish(*word, kTask);
    while (wait_slice(
               *word, [](std::uint32_t v) { return v == kReady; },
               std::chrono::microseconds(100000)) != kReady) {
    }
    publish(*word, kFree);
  }
  stop->store(1, std::memory_order_relaxed);
  interrupt(*word);
  waitpid(echo, nullptr, 0);
  state.counters["round_trips_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_SlotRoundTrip)->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace seedloader
