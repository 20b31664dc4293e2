#include "tools/seedloader_bench/measure.h"

#include <chrono>

#include "loader/datasets/process_memory.h"

namespace seedloader::bench {

void PeakMemory::sample(const DataLoader& loader) {
  std::uint64_t total = read_process_memory(getpid()).rss_bytes;
  for (pid_t pid : loader.worker_pids()) {
    try {
      total += read_process_memory(pid).pss_bytes;
    } catch (const Error&) {
      // A worker between epochs may be gone already; it costs nothing then.
    }
  }
  if (total > peak_) peak_ = total;
}

Measurement measure_host(DataLoader& loader, const BenchArgs& args) {
  using Clock = std::chrono::steady_clock;
  Measurement m;
  PeakMemory memory;
  std::uint64_t done = 0;
  const std::uint64_t total = args.warmup + args.batches;
  Clock::time_point start = Clock::now();
  std::vector<double> busy_start;
  if (args.warmup == 0) busy_start = loader.worker_busy_seconds();
  for (std::uint64_t epoch = 0; done < total; ++epoch) {
    loader.set_epoch(epoch);
    for (const Batch& b : loader) {
      if (done >= args.warmup) {
        m.samples += b.size();
        m.bytes += b.slot_bytes().size();
        ++m.batches;
      }
      if (++done == args.warmup) {
        start = Clock::now();
        busy_start = loader.worker_busy_seconds();
      }
      memory.sample(loader);
      if (done >= total) break;
    }
  }
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> busy_end = loader.worker_busy_seconds();
  for (std::size_t w = 0; w < busy_end.size(); ++w) {
    double before = w < busy_start.size() ? busy_start[w] : 0.0;
    m.worker_busy.push_back(m.seconds > 0 ? (busy_end[w] - before) / m.seconds : 0.0);
  }
  m.peak_memory_bytes = memory.peak();
  return m;
}

}  // namespace seedloader::bench
