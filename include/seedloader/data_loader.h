// DataLoader: iterates a Dataset in batches, loading them in forked worker
// processes (or in the calling thread when num_workers = 0) into shared-memory
// slots and delivering them in sampler order as zero-copy Batch views:
//
//   seedloader::DataLoader loader(dataset, opt);
//   for (int epoch = 0; epoch < E; ++epoch) {
//     loader.set_epoch(epoch);
//     for (const seedloader::Batch& b : loader) { ... b.tensor("image") ... }
//   }
//
// The dataset must outlive the loader. One iteration runs at a time: begin()
// abandons an unfinished one. Not thread-safe: iterate from one thread, and
// create the loader before starting threads of your own if you can (workers
// are forked; see docs/design.md, "Data path"). Errors: ConfigError at construction,
// WorkerError / TimeoutError while iterating; after either, the next epoch
// starts cleanly (with fresh workers when they had to be killed). Workers die
// with the thread that forked them (PR_SET_PDEATHSIG): iterating again after
// that thread has exited is a ConfigError when persistent workers were lost.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "seedloader/batch.h"
#include "seedloader/dataset.h"
#include "seedloader/loader_options.h"

namespace seedloader {

class Engine;

// What a worker started by LoaderOptions::worker_command is told: its
// arguments after the command, each a decimal number in this order.
struct WorkerLaunch {
  int worker = 0;
  std::int64_t parent = 0;        // the main process's pid
  std::uint64_t first_task = 0;   // the task it serves first (tasks count across starts)
  std::uint64_t start_epoch = 0;  // seeds the stream worker_init runs after
  int region_fd = -1;             // the shared region's memory file
  std::uint64_t region_bytes = 0;
  int spares_fd = -1;  // the spare blocks' memory file, or -1 for none
  std::uint64_t spare_block_bytes = 0;
  std::uint64_t spare_count = 0;
  // A digest of everything a worker's batches depend on (the shared memory's
  // layout, the data set's size, name and sample layout, the seeding and
  // mixing options): a worker whose loader gives another refuses to serve.
  std::uint64_t digest = 0;

  std::vector<std::string> arguments() const;
  // Throws ConfigError naming the argument that is missing, extra or not a number.
  static WorkerLaunch parse(const std::vector<std::string>& arguments);
};

class DataLoader {
 public:
  class Iterator;
  struct Sentinel {};

  // Throws ConfigError for invalid options.
  DataLoader(const Dataset& dataset, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The epoch the next begin() starts, from batch 0.
  void set_epoch(std::uint64_t epoch) {
    epoch_ = epoch;
    start_batch_ = 0;
    end_batch_ = UINT64_MAX;
  }
  // Resuming a run: the next begin() starts `epoch` at batch `start_batch`
  // (batches before it are not loaded). With SeedScope::kSample the batches
  // delivered are exactly those a full epoch delivers from there on; with
  // kWorker the samples are, but the worker streams restart. With end_batch,
  // the pass ends before that batch: nothing from there on is loaded (a part
  // of an epoch made elsewhere, as a remote worker makes its share).
  void resume(std::uint64_t epoch, std::uint64_t start_batch,
              std::uint64_t end_batch = UINT64_MAX) {
    epoch_ = epoch;
    start_batch_ = start_batch;
    end_batch_ = end_batch;
  }
  std::uint64_t epoch() const { return epoch_; }
  // Batches per epoch on this rank (under LoaderOptions::batch_plan: in the
  // epoch begin() last started, 0 before).
  std::uint64_t num_batches() const;
  // The base seed every stream derives from (drawn and announced if not given).
  std::uint64_t base_seed() const;
  const LoaderOptions& options() const;

  // Starts the epoch set by set_epoch() and waits for its first batch.
  Iterator begin();
  // Starts the epoch set by set_epoch() without waiting: the iterator's first ++
  // loads its first batch, so a dataset's error in that batch (a recoverable
  // WorkerError) leaves the iterator going on to the next batch, as it does for
  // any later batch, where begin() has only the error to give.
  Iterator start();
  Sentinel end() const { return {}; }

  // Samples replaced under BadSample::kSkip in the current (or last) epoch.
  std::uint64_t skipped_samples() const;
  // Running workers' pids (empty between epochs without persistent workers).
  std::vector<pid_t> worker_pids() const;
  // Hands the running workers over: each stops serving this loader and runs
  // LoaderOptions::worker_handoff instead of exiting, and their pids are the
  // caller's to give another loader (LoaderOptions::adopt_workers) or to reap.
  // Empty when none runs. The current epoch cannot go on (begin another).
  std::vector<pid_t> release_workers();
  // Seconds each worker has spent filling batches since it was forked.
  std::vector<double> worker_busy_seconds() const;
  // The shared region holding every slot (for pinning it, e.g. with CUDA). From
  // then on its pages stay at their addresses: a kept batch whose slot is needed
  // stays where it is, and the slot goes on in a spare block of shared memory
  // outside the region (unpinned; without the call, the kept batch is moved to
  // private memory at its address instead, one copy of its slot). Called once
  // workers run (persistent ones, or in an epoch), there are no spare blocks, and
  // keeping more batches than slots is an Error.
  std::span<std::byte> shared_memory() const;

  // The body of a worker started by LoaderOptions::worker_command, in that
  // program, on a loader built as its parent's was: maps the parent's shared
  // memory and serves worker launch.worker's slots until the parent stops it or
  // dies; never returns (it leaves with _exit). Throws ConfigError, before
  // serving anything, when this loader lays out its shared memory otherwise
  // than the parent's (not built the same way), and Error when the memory
  // cannot be mapped.
  [[noreturn]] void serve_worker(const WorkerLaunch& launch);

 private:
  std::shared_ptr<Engine> engine_;
  std::uint64_t epoch_ = 0;
  std::uint64_t start_batch_ = 0;
  std::uint64_t end_batch_ = UINT64_MAX;
};

// An input iterator over one epoch; move-only. Dereferencing gives the current
// batch; advancing hands its slot back and waits for the next one. Destroying
// it before the end abandons the epoch (workers stop promptly).
// Advancing an iterator whose epoch a later begin() abandoned throws Error. A
// WorkerError for a sample's get() (failure().recoverable) leaves it usable:
// advancing it again goes on with the batch after the failed one.
class DataLoader::Iterator {
 public:
  Iterator(Iterator&& other) noexcept;
  Iterator& operator=(Iterator&&) = delete;
  Iterator(const Iterator&) = delete;
  ~Iterator();

  const Batch& operator*() const { return current_; }
  const Batch* operator->() const { return &current_; }
  // Takes the current batch out (to keep it past the next ++).
  Batch take() { return std::move(current_); }
  Iterator& operator++();
  bool operator==(Sentinel) const { return done_; }

 private:
  friend class DataLoader;
  Iterator(Engine* engine, std::uint64_t first);
  void load();

  Engine* engine_;
  Batch current_;
  std::uint64_t next_ = 0;
  std::uint64_t generation_ = 0;  // the engine's, when this iterator's epoch began
  bool done_ = false;
};

}  // namespace seedloader
