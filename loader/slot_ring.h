// SlotRing: which slot holds which batch. The main process and the workers
// must agree on it without talking, so the arithmetic lives here, once.
//
// Invariant: worker w owns slots [w * P, (w + 1) * P) and serves them as a
// ring, in order: its task number j sits in slot w * P + j % P. Task numbers
// count every task the main process has issued to worker w since the loader
// began, across re-forks: a worker forked later starts at tasks_issued(w). The
// main process deals an epoch's batches round-robin from the epoch's first
// batch f: batch k goes to worker (k - f) % W as its task base[w] + (k - f) / W,
// where base[w] (the epoch's base) is tasks_issued(w) when the epoch began.
// Both sides count the same tasks, and the main process issues every task in
// order, so the slot the consumer computes for batch k is the slot the worker
// serves next. Counting across re-forks also means an epoch's first batch on a
// worker takes the slot after that worker's last one: with P >= 2 a consumer
// still holding the previous epoch's last batch never blocks the next epoch.
//
// A plain value owned by one side: the worker keeps only its own count, the
// main process its copy with the issue counts. Not thread-safe; nothing of it
// lives in shared memory.
#pragma once

#include <cstdint>
#include <vector>

namespace seedloader {

class SlotRing {
 public:
  // REQUIRES: workers >= 1, prefetch >= 1.
  SlotRing(int workers, int prefetch)
      : workers_(workers), prefetch_(prefetch), issued_(workers, 0), base_(workers, 0) {}

  int workers() const { return workers_; }
  int prefetch() const { return prefetch_; }
  int num_slots() const { return workers_ * prefetch_; }

  // The worker that owns slot s. REQUIRES: 0 <= s < num_slots().
  int owner(int slot) const { return slot / prefetch_; }

  // Worker side: the slot of worker w's task number `task` since its fork.
  // REQUIRES: 0 <= w < workers().
  int worker_slot(int w, std::uint64_t task) const {
    return w * prefetch_ + static_cast<int>(task % static_cast<std::uint64_t>(prefetch_));
  }

  // Main side: the number a worker forked now gives its first task.
  std::uint64_t tasks_issued(int w) const { return issued_[w]; }
  // Main side: an epoch starts at batch first_batch; the tasks issued so far
  // become its base.
  void begin_epoch(std::uint64_t first_batch) {
    base_ = issued_;
    first_batch_ = first_batch;
  }

  // Main side: the slot of batch k of the current epoch.
  // REQUIRES: k >= the epoch's first batch.
  int slot_of(std::uint64_t k) const {
    const std::uint64_t r = k - first_batch_;
    const int w = static_cast<int>(r % static_cast<std::uint64_t>(workers_));
    return worker_slot(w, base_[w] + r / static_cast<std::uint64_t>(workers_));
  }

  // Main side: worker w's next task number is not used (its slot is taken).
  // REQUIRES: no process serves worker w's ring now; one forked later starts
  // after the skipped number.
  void skip_task(int w) { ++issued_[w]; }

  // Main side: the task in `slot` was issued to its owner.
  // REQUIRES: slot == slot_of(k) for the next batch k not yet issued.
  void issued(int slot) { ++issued_[owner(slot)]; }

 private:
  int workers_;
  int prefetch_;
  std::vector<std::uint64_t> issued_;  // per worker, since the loader began
  std::vector<std::uint64_t> base_;    // issued_ when the epoch began
  std::uint64_t first_batch_ = 0;
};

}  // namespace seedloader
