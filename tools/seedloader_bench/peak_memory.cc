#include "tools/seedloader_bench/peak_memory.h"

#include <unistd.h>

#include "loader/datasets/process_memory.h"
#include "seedloader/error.h"

namespace seedloader::bench {

void PeakMemory::watch(std::vector<pid_t> pids) {
  {
    std::lock_guard lock(mu_);
    pids_ = std::move(pids);
  }
  if (!sampler_.joinable()) sampler_ = std::thread([this] { run(); });
}

std::uint64_t PeakMemory::finish() {
  stop();
  sample();
  std::lock_guard lock(mu_);
  return peak_;
}

void PeakMemory::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    sample();
    lock.lock();
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

void PeakMemory::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

void PeakMemory::sample() {
  std::vector<pid_t> pids;
  {
    std::lock_guard lock(mu_);
    pids = pids_;
  }
  std::uint64_t total = 0;
  try {
    total = read_process_memory(getpid()).rss_bytes;
  } catch (const Error&) {
    return;  // no smaps_rollup here: the peak stays 0, as "not measured"
  }
  for (pid_t pid : pids) {
    try {
      total += read_process_memory(pid).pss_bytes;
    } catch (const Error&) {
      // A worker that has just exited costs nothing any more.
    }
  }
  std::lock_guard lock(mu_);
  if (total > peak_) peak_ = total;
}

}  // namespace seedloader::bench
