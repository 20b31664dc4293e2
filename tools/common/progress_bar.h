// ProgressBar: one self-rewriting stderr line — batches done of the total,
// samples/s and the time left — redrawn at most 10 times a second, finished with
// a newline. Inactive (prints nothing) unless enabled. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace seedloader::tools {

class ProgressBar {
 public:
  ProgressBar(bool enabled, std::uint64_t total_batches)
      : enabled_(enabled), total_(total_batches), start_(Clock::now()) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() { finish(); }

  void add(std::uint64_t batches, std::uint64_t samples) {
    done_ += batches;
    samples_ += samples;
    if (!enabled_) return;
    auto now = Clock::now();
    if (done_ < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    double secs = std::chrono::duration<double>(now - start_).count();
    double rate = secs > 0 ? static_cast<double>(samples_) / secs : 0.0;
    double eta = done_ > 0 ? secs * static_cast<double>(total_ - done_) / done_ : 0.0;
    std::fprintf(stderr, "\r%llu/%llu batches  %.0f samples/s  ETA %.1f s   ",
                 static_cast<unsigned long long>(done_),
                 static_cast<unsigned long long>(total_), rate, eta);
    std::fflush(stderr);
  }

  void finish() {
    if (enabled_ && done_ > 0 && !finished_) std::fputc('\n', stderr);
    finished_ = true;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  bool finished_ = false;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
  std::uint64_t samples_ = 0;
  Clock::time_point start_;
  Clock::time_point last_draw_{};
};

}  // namespace seedloader::tools
