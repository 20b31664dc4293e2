// fill_batch: reads one batch's samples from a dataset straight into a slot,
// the one routine behind both worker processes and num_workers = 0, so the two
// seed and collate identically. Before each get() it records the fingerprint of
// the stream get() will draw from. With BadSample::kSkip, a sample whose get()
// throws DataError is replaced by the next of Dataset::replacements(index) (index+1,
// +2, ... mod N; within its source for a mixture); in kSample mode the
// replacement draws from a fresh copy of the original index's stream, so the
// batch stays the same for every worker count; in kWorker mode it continues the
// worker's stream. The index array then names the sample actually delivered.
// A sample's stream is Dataset::sample_rng(seed, e, original index), e its row's
// stream epoch in the slot (the task's epoch, or a mixture source's).
// With a BatchMixer, the filled batch is then mixed (MixUp / CutMix) from the
// batch's own stream. Not thread-safe; one call per slot at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "loader/batch_mixer.h"
#include "loader/shared_layout.h"
#include "seedloader/dataset.h"
#include "seedloader/loader_options.h"
#include "seedloader/pcg64_stream.h"

namespace seedloader {

struct FillContext {
  const Dataset* dataset = nullptr;
  const SlotGeometry* geometry = nullptr;
  SeedScope seeding = SeedScope::kWorker;
  BadSample on_bad_sample = BadSample::kRaise;
  std::uint64_t base_seed = 0;
  std::uint64_t rank = 0;
  const BatchMixer* mixer = nullptr;  // set: mix each filled batch
  // The slot's indices hold one more, the mix's partner for row 0: it is read into
  // row `count` and serves the mix, not the batch (Partition::kElastic).
  bool partner_row = false;
};

struct FillResult {
  enum class Outcome { kDone, kCancelled, kFailed } outcome = Outcome::kDone;
  std::uint64_t skipped = 0;
  std::int64_t error_index = -1;  // kFailed: the sample, -1 when not one sample
  std::string message;            // kFailed: what get() threw
  // kFailed: what get() threw was a DatasetException: its type() and original().
  std::string exception_type;
  std::exception_ptr original;
};

// What a fill watches to learn that its task was abandoned: the shared
// generation, and the one the task was issued under. A fill in a worker
// watches; a fill in the consumer's own thread cannot be abandoned under it.
struct CancelWatch {
  // Never cancels: for fills in the thread that would do the abandoning.
  static CancelWatch never() { return {}; }
  // Cancels once `current` differs from `task`. REQUIRES: current outlives the fill.
  static CancelWatch on_change(const std::atomic<std::uint64_t>& current,
                               std::uint64_t task) {
    return {&current, task};
  }

  // Relaxed: a stale read only delays the cancellation by one sample.
  bool cancelled() const {
    return current != nullptr && current->load(std::memory_order_relaxed) != task;
  }

  const std::atomic<std::uint64_t>* current = nullptr;
  std::uint64_t task = 0;
};

// Fills samples [0, count) of the slot at `slot`, batch `batch` of the epoch,
// from the indices already in it.
// worker_rng: the worker stream (used in kWorker mode). The fill stops
// (kCancelled) between samples once `watch` says the task was abandoned.
FillResult fill_batch(const FillContext& ctx, std::byte* slot, std::uint64_t epoch,
                      std::uint64_t batch, std::uint64_t count, Rng& worker_rng,
                      CancelWatch watch);

}  // namespace seedloader
