// Engine: the main-process side of a DataLoader. It owns the shared region,
// the worker pool and the epoch's bookkeeping, and implements the protocol:
//   - batch k of an epoch begun at batch f goes to worker w = (k - f) % W, into
//     the slot SlotRing names (each
//     worker's slots form a ring that it serves in order); a task (epoch,
//     generation, batch, count, indices) is written into the slot and
//     published with kTask;
//   - tasks are issued in batch order as slots come free, so a worker is at
//     most P batches ahead; the consumer waits for exactly batch k;
//   - every wait is a series of short futex sleeps; between them the engine
//     reaps the awaited worker if it died (waitpid WNOHANG) and enforces the
//     timeout, so a wait never hangs;
//   - beginning an epoch, and so abandoning the one before, bumps the shared
//     generation: workers give up stale tasks between samples, and the engine
//     collects every slot back.
// With num_workers = 0 the same slots are filled in the calling thread, when
// the consumer asks for each batch, with the same seeding. The two ways differ
// only behind Engine::Mode (InThreadMode, ForkedMode in engine.cc); the rest
// of the engine never asks which one runs.
// Owned through shared_ptr (batches keep it alive). Single-threaded: one
// consumer thread calls everything, including Batch destructors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "loader/batch_filler.h"
#include "loader/batch_mixer.h"
#include "loader/shared_layout.h"
#include "loader/shared_region.h"
#include "loader/slot_owner.h"
#include "loader/slot_ring.h"
#include "loader/worker_pool.h"
#include "seedloader/batch.h"
#include "seedloader/batch_sampler.h"
#include "seedloader/data_loader.h"
#include "seedloader/dataset.h"
#include "seedloader/loader_options.h"
#include "seedloader/sampler.h"

namespace seedloader {

class Engine : public SlotOwner, public std::enable_shared_from_this<Engine> {
 public:
  // Throws ConfigError for invalid options (see validate()).
  Engine(const Dataset& dataset, LoaderOptions options);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Batches in the current epoch; under a batch plan, 0 before the first
  // epoch begins (each epoch's plan sets it).
  std::uint64_t num_batches() const { return num_batches_; }
  std::uint64_t base_seed() const { return base_seed_; }
  const LoaderOptions& options() const { return options_; }

  // Starts an epoch at batch first_batch (forking workers when none run),
  // abandoning any unfinished one; the pass ends before batch end_batch (the
  // epoch's end when that is sooner), and no batch from there on is issued.
  // Batches of earlier epochs still held keep their slots.
  void begin_epoch(std::uint64_t epoch, std::uint64_t first_batch,
                   std::uint64_t end_batch = UINT64_MAX);
  // The batch the current pass ends before: min(end_batch, num_batches()).
  std::uint64_t end_batch() const { return end_batch_; }
  // Batch k of the current epoch. REQUIRES: k is the next batch in order
  // (from first_batch) and k < num_batches(). Throws WorkerError or
  // TimeoutError; a WorkerError for a sample's get() is recoverable (the epoch
  // stays active and batch k + 1 may be fetched next), any other ends the epoch. When the
  // consumer still holds the batch in k's slot, that batch is detached (already when
  // tasks are issued, if the consumer has taken a later batch since: see
  // kept_past_newer()): it keeps its bytes at its address in private memory (one copy of
  // the slot, freed when it is dropped), and the slot's shared pages move to a new
  // address in this process (SharedRegion::detach). After expose_region() the slot
  // moves to another block instead (relocate()), or, without spare blocks, that is an
  // Error.
  Batch fetch(std::uint64_t k);
  // After the last batch: reports skipped samples, stops per-epoch workers.
  void end_epoch();
  // Stops the epoch early (the consumer broke off); never throws.
  void abandon_epoch() noexcept;
  // Whether step k of the current epoch is skipped (LoaderOptions::skip): the
  // iterator fetches it (a per-sample seeded one is empty) and passes over it.
  bool step_skipped(std::uint64_t k) const {
    return k < skipped_steps_.size() && skipped_steps_[k];
  }
  // Changes whenever an epoch starts or is abandoned, so an iterator can tell
  // whether the epoch it walked is still the one in progress.
  std::uint64_t generation() const { return generation_; }
  // Stops and reaps all workers; never throws.
  void shutdown() noexcept;

  void release(int slot, const std::byte* data) noexcept override;

  // The shared region, for a caller that pins it (cudaHostRegister): from then
  // on every slot's data stays at its address. A kept batch whose slot the ring
  // needs keeps that data, and the slot goes on in a free block (relocate());
  // spare blocks for that exist when no worker has been forked and nothing was
  // detached before this call, else such a batch is an Error (see fetch()).
  std::span<std::byte> expose_region();

  // DataLoader::serve_worker: worker launch.worker of the engine that started
  // this program, served on the parent's shared memory through this engine's
  // layout, data set and options.
  [[noreturn]] void serve_worker(const WorkerLaunch& launch);

  std::uint64_t skipped_samples() const { return skipped_; }
  std::vector<pid_t> worker_pids() const;
  std::vector<double> worker_busy_seconds() const;
  // DataLoader::release_workers.
  std::vector<pid_t> release_workers();

 private:
  struct SlotUse {
    std::int64_t batch = -1;       // issued and not yet released, or -1
    std::uint64_t generation = 0;  // the engine's generation when it was issued
    bool held = false;             // delivered to the consumer
  };

  // Who fills the slots: the consumer's own thread or forked workers. Each
  // method is a point where the two differ; see engine.cc.
  class Mode;
  class InThreadMode;
  class ForkedMode;
  static std::unique_ptr<Mode> make_mode(Engine& engine);

  int workers() const { return options_.num_workers; }
  SlotHeader& header(int slot) const;
  std::byte* data(int slot) const { return slot_data_[slot]; }
  // Gives slot `slot`, whose batch the consumer holds, back to the ring: the
  // batch keeps a private copy at its address (fetch() says how).
  void detach(int slot);
  // Gives slot `slot`, whose batch the consumer holds, back to the ring when the
  // slots must stay in place (pinned): the batch keeps its block, and the slot
  // writes its next batches to a free block (another slot's own data a kept
  // batch left, or a spare one). Throws Error when none is left.
  void relocate(int slot);
  // detach() or, after expose_region(), relocate().
  void move_aside(int slot);
  // Whether a held slot the ring needs can be moved aside.
  bool can_move_held() const;
  // Where data block `block` (SlotHeader::block) is in this process.
  std::byte* block_address(std::uint64_t block) const;
  // Whether the consumer still holds slot `slot`'s batch of this epoch although
  // it has taken a later one since (list(loader) does; a loop that drops each
  // batch holds only the newest).
  bool kept_past_newer(int slot) const;
  void start_workers();
  // start_workers() under LoaderOptions::worker_command: each worker a new
  // program, told where the shared memory is (WorkerLaunch).
  void start_programs();
  // start_workers() adopting LoaderOptions::adopt_workers (the first start).
  void adopt_workers();
  // The WorkerLaunch every worker of a start shares (worker and first_task aside),
  // and the descriptors it names.
  WorkerLaunch launch_template(std::vector<int>& fds) const;
  // WorkerLaunch::digest of this engine.
  std::uint64_t worker_digest() const;
  // Leaves the skipped samples out of the epoch's batches and marks its skipped
  // steps (LoaderOptions::skip), after batches_ was built.
  void apply_skips(std::uint64_t epoch);
  // Where `batch` (one of batches_) starts in batches_->indices().
  std::size_t row_of(std::span<const Index> batch) const;
  // Whether some filler's next slot holds a batch the consumer still has.
  bool next_slot_held() const;
  // Moves each filler's ring past the held slots its next tasks would land on,
  // so a batch kept from an earlier epoch is never handed out again or
  // overwritten. REQUIRES: no worker runs (a worker forked later starts there).
  void skip_held_slots();
  // ConfigError (after reaping them) when persistent workers were killed because
  // the thread that forked them has exited; see WorkerPool::forking_thread_alive.
  void check_forking_thread();
  void stop_workers(std::chrono::milliseconds grace) noexcept;
  // Sets the control block's stop word to `how` and wakes every worker.
  void tell_workers_to_stop(std::uint32_t how) noexcept;
  void pump() noexcept;
  // Rewrites the ReadAhead block with the samples of the batches from `from` on,
  // when the data set asked for them and they changed.
  void publish_read_ahead(std::uint64_t from) noexcept;
  // Waits until the slot leaves kTask; throws on a dead worker or a timeout.
  std::uint32_t await(int slot, std::uint64_t k);
  [[noreturn]] void throw_failed(int slot, std::uint64_t k);
  void collect_outstanding() noexcept;

  const Dataset& dataset_;
  LoaderOptions options_;
  std::unique_ptr<Mode> mode_;       // before region_layout_, which asks it for rings
  std::optional<BatchMixer> mixer_;  // before layout_, which it extends
  SampleLayout layout_;
  std::uint64_t base_seed_;
  std::unique_ptr<Sampler> sampler_;
  std::uint64_t num_batches_;
  RegionLayout region_layout_;
  SlotRing ring_;  // which slot holds which batch; see slot_ring.h
  SharedRegion region_;
  FillContext fill_;
  WorkerPool pool_;

  std::vector<SlotUse> slots_;
  // Where this process sees each slot's data: in the region until a detach()
  // moves it. Workers forked later get the table as it is then.
  std::vector<std::byte*> slot_data_;
  // Private copies of detached batches still held, by address.
  std::vector<std::byte*> copies_;
  bool detach_allowed_ = true;  // until expose_region()
  bool ever_detached_ = false;  // a detach() leaves holes in the region when freed
  // After expose_region(): the data block each slot writes to (SlotHeader::block),
  // the blocks kept batches hold (by the address their Batch has), the blocks
  // free again, the spare blocks, and how many of those were ever used.
  std::vector<std::uint64_t> block_;
  std::vector<std::pair<const std::byte*, std::uint64_t>> kept_blocks_;
  std::vector<std::uint64_t> free_blocks_;
  std::optional<SpareBlocks> spares_;
  std::uint64_t spares_used_ = 0;
  std::optional<BatchSampler> batches_;
  // Per index of batches_ (flat, in its order), the epoch its stream is keyed by
  // (EpochOrder::stream_epochs); empty: the epoch's own.
  std::vector<std::uint64_t> stream_epochs_;
  std::vector<bool> skipped_steps_;  // per batch of the epoch
  // Partition::kElastic with a batch mix: per batch, the sample before this rank's
  // first in its global batch, filled into the slot's extra row as the mix's
  // partner for row 0, with its stream's epoch (Sampler::partners()).
  EpochOrder partners_;
  bool active_ = false;
  std::uint64_t epoch_ = 0;
  std::uint64_t first_batch_ = 0;
  std::uint64_t end_batch_ = 0;
  std::uint64_t generation_ = 0;
  std::uint64_t next_issue_ = 0;
  std::int64_t delivered_ = -1;  // the last batch fetch() returned this epoch, or -1
  // What the ReadAhead block holds: the batches from read_ahead_from_ of
  // generation read_ahead_of_ (0: nothing yet).
  std::uint64_t read_ahead_from_ = 0;
  std::uint64_t read_ahead_of_ = 0;
  std::uint64_t skipped_ = 0;
};

}  // namespace seedloader
