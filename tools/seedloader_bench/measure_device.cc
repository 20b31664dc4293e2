// measure_device with CUDA: batches reach GPU 0 through DevicePrefetcher; a plain
// pinned-memory cudaMemcpyAsync of the same size is timed beside it.
#include <chrono>

#include "base/cuda_check.h"
#include "seedloader/device_prefetcher.h"
#include "tools/seedloader_bench/measure.h"
#include "tools/seedloader_bench/peak_memory.h"

namespace seedloader::bench {
namespace {

// H2D bytes/s of `bytes` copied `reps` times from pinned host memory.
double pinned_memcpy_rate(std::size_t bytes, int reps) {
  void* host = nullptr;
  void* dev = nullptr;
  cudaStream_t stream = nullptr;
  SL_CHECK_CUDA(cudaMallocHost(&host, bytes));
  SL_CHECK_CUDA(cudaMalloc(&dev, bytes));
  SL_CHECK_CUDA(cudaStreamCreate(&stream));
  SL_CHECK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
  SL_CHECK_CUDA(cudaStreamSynchronize(stream));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    SL_CHECK_CUDA(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
  }
  SL_CHECK_CUDA(cudaStreamSynchronize(stream));
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SL_CHECK_CUDA(cudaStreamDestroy(stream));
  SL_CHECK_CUDA(cudaFree(dev));
  SL_CHECK_CUDA(cudaFreeHost(host));
  return static_cast<double>(bytes) * reps / s;
}

}  // namespace

Measurement measure_device(DataLoader& loader, const BenchArgs& args) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    throw ConfigError("--device: no CUDA device is present");
  }
  SL_CHECK_CUDA(cudaSetDevice(0));
  using Clock = std::chrono::steady_clock;
  Measurement m;
  PeakMemory memory;
  DevicePrefetcher prefetcher(loader, 0);
  std::uint64_t done = 0, slot_bytes = 0;
  const std::uint64_t total = args.warmup + args.batches;
  Clock::time_point start = Clock::now();
  double cpu_start = thread_cpu_seconds();
  for (std::uint64_t epoch = 0; done < total; ++epoch) {
    prefetcher.start_epoch(epoch);
    bool first = true;
    while (const DeviceBatch* b = prefetcher.next()) {
      // Once per epoch, after the epoch's start has forked any workers.
      if (first) memory.watch(loader.worker_pids());
      if (done == 0)
        m.first_batch_seconds =
            std::chrono::duration<double>(Clock::now() - start).count();
      first = false;
      slot_bytes = b->host.slot_bytes().size();
      if (done >= args.warmup) {
        m.samples += b->host.size();
        m.bytes += slot_bytes;
        ++m.batches;
      }
      if (++done == args.warmup) {
        SL_CHECK_CUDA(cudaDeviceSynchronize());
        start = Clock::now();
        cpu_start = thread_cpu_seconds();
      }
      if (done >= total) break;
    }
  }
  SL_CHECK_CUDA(cudaDeviceSynchronize());
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  m.main_cpu_seconds = thread_cpu_seconds() - cpu_start;
  m.peak_memory_bytes = memory.finish();
  m.device_bytes_per_s = m.seconds > 0 ? m.bytes / m.seconds : 0;
  m.pinned_memcpy_bytes_per_s = pinned_memcpy_rate(slot_bytes, 20);
  return m;
}

}  // namespace seedloader::bench
