// PeakMemory: the peak of the main process's RSS plus every worker's PSS, read
// from /proc/PID/smaps_rollup by a background thread every `period` and once
// more in finish(). Reading smaps_rollup walks every mapping in the kernel: done
// per batch on the consuming thread it cost about 8% of a run and stalled the
// workers it read, so the timed loop must not do it. Even every 50 ms it took
// about 6% of a core (the main process maps every slot); every 200 ms it stays
// near 1.5%, and memory, which grows to its plateau and stays, is still seen at
// its peak (finish() reads once more at the end).
//
// The sampler never calls into the DataLoader, which is not thread-safe (its pid
// list changes when workers start or stop): the consuming thread hands it a
// snapshot of the pids through watch(), under mu_.
// Thread-safety: watch() and finish() from one thread (the consumer's); the
// sampler thread is private. The owner stops and joins it (destructor or finish()).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace seedloader::bench {

class PeakMemory {
 public:
  explicit PeakMemory(std::chrono::milliseconds period = std::chrono::milliseconds(200))
      : period_(period) {}
  ~PeakMemory() { stop(); }
  PeakMemory(const PeakMemory&) = delete;
  PeakMemory& operator=(const PeakMemory&) = delete;

  // The workers to sample from now on; the first call starts the sampler. Call
  // it once the loader has forked its workers (after begin()), so that, in the
  // usual run, no fork happens while the sampler thread exists.
  void watch(std::vector<pid_t> pids);
  // Stops the sampler, samples once more and returns the peak in bytes.
  std::uint64_t finish();

 private:
  void run();
  void stop();
  // One reading of main RSS + workers' PSS; raises peak_. Holds no lock while
  // reading /proc, so watch() never waits on the kernel.
  void sample();

  const std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<pid_t> pids_;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::uint64_t peak_ = 0;   // guarded by mu_
  std::thread sampler_;      // started and joined by the consuming thread
};

}  // namespace seedloader::bench
