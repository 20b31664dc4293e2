// Transport of large batches: 32 MB per batch (8 samples of 4 MB, copied by
// the workers from an in-memory dataset straight into the shared slot), read
// in place by the consumer. Reports bytes/s beside single-thread memcpy of the
// same 32 MB on the same machine.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench/batch_stream.h"
#include "loader/shared_region.h"
#include "seedloader/data_loader.h"
#include "seedloader/in_memory_dataset.h"

namespace seedloader {
namespace {

constexpr std::int64_t kSample = 4 << 20;
constexpr std::uint64_t kBatch = 8;
constexpr std::int64_t kBatchBytes = kSample * static_cast<std::int64_t>(kBatch);

InMemoryDataset& big_dataset() {
  static InMemoryDataset ds = [] {
    InMemoryDataset d(SampleLayout({{"blob", DType::kU8, {kSample}, false}}), 2 * kBatch);
    auto b = d.field<std::uint8_t>(0);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(i * 31);
    return d;
  }();
  return ds;
}

void BM_LoaderTransport(benchmark::State& state) {
  LoaderOptions o;
  o.batch_size = kBatch;
  o.num_workers = static_cast<int>(state.range(0));
  o.prefetch = 2;
  o.seed = 1;
  o.persistent_workers = true;
  DataLoader loader(big_dataset(), o);
  BatchStream batches(loader);
  std::uint64_t checksum = 0;
  for (auto _ : state) {
    const TensorView t = batches.next().tensor(0);
    checksum += static_cast<std::uint64_t>(t.data[t.bytes() - 1]);  // in place, no copy
  }
  benchmark::DoNotOptimize(checksum);
  state.SetBytesProcessed(state.iterations() * kBatchBytes);
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<std::uint8_t> src(kBatchBytes, 1), dst(kBatchBytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBatchBytes);
}

// The same copy into an anonymous shared mapping, as the workers write.
void BM_MemcpyToShared(benchmark::State& state) {
  std::vector<std::uint8_t> src(kBatchBytes, 1);
  SharedRegion dst(kBatchBytes);
  for (auto _ : state) {
    std::memcpy(dst.base(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kBatchBytes);
}

BENCHMARK(BM_LoaderTransport)->Arg(1)->Arg(2)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_Memcpy)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_MemcpyToShared)->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace seedloader
