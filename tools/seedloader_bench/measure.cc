#include "tools/seedloader_bench/measure.h"

#include <time.h>

#include <chrono>

#include "tools/seedloader_bench/peak_memory.h"

namespace seedloader::bench {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

Measurement measure_host(DataLoader& loader, const BenchArgs& args) {
  using Clock = std::chrono::steady_clock;
  Measurement m;
  PeakMemory memory;
  std::uint64_t done = 0;
  const std::uint64_t total = args.warmup + args.batches;
  Clock::time_point start = Clock::now();
  double cpu_start = thread_cpu_seconds();
  std::vector<double> busy_start;
  if (args.warmup == 0) busy_start = loader.worker_busy_seconds();
  for (std::uint64_t epoch = 0; done < total; ++epoch) {
    loader.set_epoch(epoch);
    bool first = true;
    for (const Batch& b : loader) {
      // Once per epoch, after begin() has forked any workers it needed.
      if (first) memory.watch(loader.worker_pids());
      if (done == 0)
        m.first_batch_seconds =
            std::chrono::duration<double>(Clock::now() - start).count();
      first = false;
      if (done >= args.warmup) {
        m.samples += b.size();
        m.bytes += b.slot_bytes().size();
        ++m.batches;
      }
      if (++done == args.warmup) {
        start = Clock::now();
        cpu_start = thread_cpu_seconds();
        busy_start = loader.worker_busy_seconds();
      }
      if (done >= total) break;
    }
  }
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  m.main_cpu_seconds = thread_cpu_seconds() - cpu_start;
  std::vector<double> busy_end = loader.worker_busy_seconds();
  for (std::size_t w = 0; w < busy_end.size(); ++w) {
    double before = w < busy_start.size() ? busy_start[w] : 0.0;
    m.worker_busy.push_back(m.seconds > 0 ? (busy_end[w] - before) / m.seconds : 0.0);
  }
  m.peak_memory_bytes = memory.finish();
  return m;
}

}  // namespace seedloader::bench
