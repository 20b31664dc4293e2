#include "loader/engine.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "loader/worker_main.h"
#include "seedloader/batch_sampler.h"
#include "seedloader/derive.h"
#include "seedloader/distributed_sampler.h"
#include "seedloader/elastic_sampler.h"
#include "seedloader/error.h"
#include "seedloader/mixture.h"

namespace seedloader {

namespace {

using std::chrono::milliseconds;

// How long the consumer sleeps between liveness checks (and, from Python,
// signal checks; a signal interrupts the sleep anyway). Each wake costs a
// Python consumer a cold pass through the interpreter, so the slice is long
// enough that a batch takes at most one wait; a timeout shortens it.
constexpr std::chrono::microseconds kConsumerSlice{100000};
// How long workers get to leave on their own before SIGKILL.
constexpr milliseconds kStopGrace{1000};
// How long an abandoned epoch's tasks get to come back before the workers are
// killed instead (only ever reached by a worker stuck inside get()).
constexpr milliseconds kCollectLimit{5000};
// How long per-epoch workers get to leave when an epoch is abandoned: they
// stop between samples once they see the new generation, so this is short.
constexpr milliseconds kAbandonGrace{100};

// The options, validated, with the base seed filled in.
LoaderOptions resolved(const Dataset& d, LoaderOptions o) {
  validate(o, d.size());
  if (o.order == ShuffleOrder::kShards && o.shuffle && !o.batch_plan &&
      d.shard_sizes().empty()) {
    throw ConfigError("DataLoader: order shards reads a data set shard by shard, but " +
                      d.describe() + " is not stored in shards (TarShards is)");
  }
  if (!o.seed) {
    // Each process would draw its own seed, so the ranks would shard different
    // permutations and train overlapping samples; a loader cannot agree one with
    // the other processes (ddp-train agrees one over MPI, Python over torch's
    // process group). A mixture's order is drawn from the seed, shuffle or not.
    if (o.world_size > 1 && !o.batch_plan && (o.shuffle || d.mixture())) {
      throw ConfigError("DataLoader: no seed given for rank " + std::to_string(o.rank) +
                        " of " + std::to_string(o.world_size) +
                        ": each rank would draw its own and shuffle another order, "
                        "so ranks would train overlapping samples; give every rank "
                        "the same seed");
    }
    o.seed = draw_base_seed("DataLoader");
  }
  return o;
}

// Samples one slot must hold: a batch never has more than the sampler yields in
// an epoch, so a batch size beyond the (per-rank) dataset must not size the
// shared region (batch_size 10^6 over 10 samples would map 10^6 rows).
// Under a batch plan a batch may repeat indices (a sampler drawing with
// replacement), so only batch_size bounds it.
// An elastic batch mix needs one more row: the partner of the rank's first sample
// (Engine::partners_).
std::uint64_t slot_capacity(std::uint64_t epoch_samples, const LoaderOptions& o) {
  if (o.batch_plan) return o.batch_size;
  const bool partner = o.partition == Partition::kElastic && o.mix.enabled();
  return std::max<std::uint64_t>(1, std::min(o.batch_size, epoch_samples)) +
         (partner ? 1 : 0);
}

// The epoch's batches from options.batch_plan, checked against the slot and the
// dataset.
BatchSampler planned_batches(const LoaderOptions& o, std::uint64_t epoch,
                             std::uint64_t dataset_size) {
  const std::vector<std::vector<Index>> batches = o.batch_plan(epoch);
  const std::string where = "DataLoader: the batch plan's epoch " + std::to_string(epoch);
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const std::vector<Index>& b = batches[k];
    if (b.empty() || b.size() > o.batch_size) {
      throw ConfigError(where + " batch " + std::to_string(k) + " holds " +
                        std::to_string(b.size()) + " indices; a batch holds 1 to " +
                        std::to_string(o.batch_size));
    }
    for (Index i : b) {
      if (i >= dataset_size) {
        throw ConfigError(where + " batch " + std::to_string(k) + " names sample " +
                          std::to_string(i) + ", beyond the dataset's " +
                          std::to_string(dataset_size) + " samples");
      }
    }
  }
  return BatchSampler(batches);
}

}  // namespace

// The points where filling in the consumer's thread and filling in forked
// workers differ. A Mode belongs to its engine and runs on the engine's one
// consumer thread.
class Engine::Mode {
 public:
  explicit Mode(Engine& engine) : e_(engine) {}
  virtual ~Mode() = default;
  Mode(const Mode&) = delete;
  Mode& operator=(const Mode&) = delete;

  // How many slot rings the shared region needs: one per filler.
  virtual int rings() const = 0;
  // An epoch begins: someone will fill its slots, seeded for `epoch`.
  virtual void begin_epoch(std::uint64_t epoch) = 0;
  // A task is written into the slot: hands it to whoever fills it.
  virtual void hand_over(SlotHeader& h) = 0;
  // Brings batch k's slot out of kTask; returns its state. Throws
  // WorkerError or TimeoutError when the filler died or is late.
  virtual std::uint32_t complete(int slot, std::uint64_t k) = 0;
  // The main process is done with the slot; hands it back to its filler.
  virtual void take_back(SlotHeader& h) noexcept = 0;
  // Gets back every slot of the epoch just abandoned that is not held.
  // REQUIRES: the engine has marked the epoch inactive.
  virtual void abandon() noexcept = 0;
  // The process that fills worker w's slots, and how messages name it.
  virtual pid_t pid(int w) const = 0;
  virtual std::string who(int w) const = 0;
  // The exception the last failed batch's get() raised, where it was raised in
  // this process (WorkerFailure::original); null otherwise. Hands it over.
  virtual std::exception_ptr take_original() noexcept = 0;

 protected:
  Engine& e_;
};

// num_workers = 0: the consumer fills each slot itself when it asks for the
// batch, so a task is never in flight and nothing needs publishing.
class Engine::InThreadMode final : public Engine::Mode {
 public:
  using Mode::Mode;

  int rings() const override { return 1; }

  void begin_epoch(std::uint64_t epoch) override {
    rng_ = worker_stream(e_.base_seed_, epoch, e_.options_.rank, 0);
    e_.skip_held_slots();
  }

  void hand_over(SlotHeader&) override {}  // complete() fills it

  std::uint32_t complete(int slot, std::uint64_t) override {
    SlotHeader& h = e_.header(slot);
    FillResult r = fill_batch(e_.fill_, e_.data(slot), e_.epoch_, h.batch, h.count, *rng_,
                              CancelWatch::never());
    h.skipped = r.skipped;
    if (r.outcome == FillResult::Outcome::kFailed) {
      write_error(h, r.error_index, ErrorStage::kGet, r.message, r.exception_type);
      original_ = std::move(r.original);
    }
    return r.outcome == FillResult::Outcome::kDone ? kReady : kError;
  }

  void take_back(SlotHeader&) noexcept override {}

  void abandon() noexcept override {
    // Nothing is in flight: every slot not held is free at once.
    for (SlotUse& u : e_.slots_) {
      if (!u.held) u.batch = -1;
    }
  }

  pid_t pid(int) const override { return getpid(); }
  std::string who(int) const override { return "in-thread loader (num_workers=0)"; }
  std::exception_ptr take_original() noexcept override {
    return std::exchange(original_, {});
  }

 private:
  std::optional<Rng> rng_;       // the one stream, reseeded every epoch
  std::exception_ptr original_;  // the last failed get()'s, until taken
};

// num_workers > 0: forked workers fill the slots; tasks and results cross the
// slot state words (slot_state.h).
class Engine::ForkedMode final : public Engine::Mode {
 public:
  using Mode::Mode;

  int rings() const override { return e_.workers(); }

  void begin_epoch(std::uint64_t) override {
    // Workers reseed themselves from each task's epoch. A running worker's ring
    // cannot move past a slot the consumer still holds from an earlier epoch
    // (the worker waits on that slot), so such workers are forked afresh.
    if (e_.pool_.running() && e_.next_slot_held()) e_.stop_workers(kStopGrace);
    if (!e_.pool_.running()) e_.start_workers();
  }

  void hand_over(SlotHeader& h) override {
    // Release (inside publish): the task is complete before the worker can
    // see kTask.
    publish(h.state, kTask);
  }

  std::uint32_t complete(int slot, std::uint64_t k) override { return e_.await(slot, k); }

  void take_back(SlotHeader& h) noexcept override {
    // Release (inside publish) orders nothing the worker needs here, but going
    // through publish wakes a worker that sleeps on this slot waiting for a
    // task. Without workers, start_workers() frees the slot instead.
    if (e_.pool_.running()) publish(h.state, kFree);
  }

  void abandon() noexcept override {
    ++e_.generation_;
    // Relaxed: workers poll it between samples; they publish the slot back
    // (release) whichever way they end the task, and we acquire that in
    // collect_outstanding(). Per-epoch workers see it too, so they stop
    // between samples before being told to exit, instead of finishing the
    // batch or being killed mid-get().
    e_.region_.at<ControlBlock>(e_.region_layout_.control())
        ->generation.store(e_.generation_, std::memory_order_relaxed);
    if (!e_.options_.persistent_workers) {
      e_.stop_workers(kAbandonGrace);
      return;
    }
    e_.collect_outstanding();
  }

  pid_t pid(int w) const override { return e_.pool_.pid(w); }
  std::string who(int w) const override {
    return "worker " + std::to_string(w) + " (pid " + std::to_string(pid(w)) + ")";
  }
  // An exception raised in a worker stays there; its type came in the slot.
  std::exception_ptr take_original() noexcept override { return nullptr; }
};

std::unique_ptr<Engine::Mode> Engine::make_mode(Engine& engine) {
  if (engine.workers() == 0) return std::make_unique<InThreadMode>(engine);
  return std::make_unique<ForkedMode>(engine);
}

Engine::Engine(const Dataset& dataset, LoaderOptions options)
    : dataset_(dataset),
      options_(resolved(dataset, std::move(options))),
      mode_(make_mode(*this)),
      mixer_(options_.mix.enabled() ? std::optional<BatchMixer>(
                                          std::in_place, options_.mix, dataset.layout())
                                    : std::nullopt),
      layout_(mixer_ ? mixer_->layout() : dataset.layout()),
      base_seed_(*options_.seed),
      sampler_(loader_sampler(dataset, options_, base_seed_)),
      num_batches_(options_.batch_plan
                       ? 0
                       : batches_per_epoch({.samples = sampler_->size(),
                                            .batch_size = options_.batch_size,
                                            .drop_last = options_.drop_last})),
      region_layout_(layout_, slot_capacity(sampler_->size(), options_), mode_->rings(),
                     options_.prefetch,
                     options_.num_workers > 0 ? dataset.read_ahead() : 0),
      ring_(region_layout_.workers(), region_layout_.prefetch()),
      region_(region_layout_.total_bytes()) {
  // Start the lifetime of the shared structs (the mapping is zero-filled;
  // value-initialisation writes the same zeros) before any worker exists.
  new (region_.at<ControlBlock>(region_layout_.control())) ControlBlock();
  for (int w = 0; w < region_layout_.workers(); ++w) {
    new (region_.at<WorkerBlock>(region_layout_.worker_block(w))) WorkerBlock();
  }
  for (int s = 0; s < region_layout_.num_slots(); ++s) {
    new (region_.at<SlotHeader>(region_layout_.header(s))) SlotHeader();
  }
  new (region_.at<ReadAhead>(region_layout_.read_ahead())) ReadAhead();
  auto* ahead =
      region_.at<std::atomic<std::uint64_t>>(region_layout_.read_ahead_indices());
  for (std::uint64_t i = 0; i < region_layout_.read_ahead_capacity(); ++i)
    new (ahead + i) std::atomic<std::uint64_t>(0);
  fill_.dataset = &dataset_;
  fill_.geometry = &region_layout_.slot();
  fill_.seeding = options_.seeding;
  fill_.on_bad_sample = options_.on_bad_sample;
  fill_.base_seed = base_seed_;
  // Elastic: a global batch is mixed as one, from the stream of its number alone.
  fill_.rank = options_.partition == Partition::kElastic ? 0 : options_.rank;
  fill_.partner_row = options_.partition == Partition::kElastic && mixer_.has_value();
  fill_.mixer = mixer_ ? &*mixer_ : nullptr;
  slots_.resize(region_layout_.num_slots());
  for (int s = 0; s < region_layout_.num_slots(); ++s) {
    slot_data_.push_back(region_.base() + region_layout_.data(s));
    block_.push_back(static_cast<std::uint64_t>(s));
  }
}

Engine::~Engine() { shutdown(); }

SlotHeader& Engine::header(int slot) const {
  return *region_.at<SlotHeader>(region_layout_.header(slot));
}

void Engine::detach(int slot) {
  std::byte* held = slot_data_[slot];
  // Reserved first: after detach() a failed push_back would lose the copy.
  copies_.reserve(copies_.size() + 1);
  slot_data_[slot] = region_.detach(held, region_layout_.slot().bytes);
  copies_.push_back(held);
  ever_detached_ = true;
  slots_[slot].held = false;
  slots_[slot].batch = -1;
  mode_->take_back(header(slot));
}

void Engine::relocate(int slot) {
  const auto own = static_cast<std::uint64_t>(region_layout_.num_slots());
  // Reserved before anything moves: release() then never allocates.
  kept_blocks_.reserve(kept_blocks_.size() + 1);
  free_blocks_.reserve(own + spares_used_ + 1);
  std::uint64_t next;
  if (!free_blocks_.empty()) {
    // The lowest first: a slot's own data (pinned) before a spare block.
    auto lowest = std::min_element(free_blocks_.begin(), free_blocks_.end());
    next = *lowest;
    free_blocks_.erase(lowest);
  } else if (spares_used_ < spares_->count()) {
    next = own + spares_used_++;
  } else {
    throw Error(
        "DataLoader: the consumer keeps more batches than the pinned slots and "
        "their spare blocks hold (" +
        std::to_string(spares_->count()) + " blocks of " +
        std::to_string(region_layout_.slot().bytes) +
        " bytes, as much as this machine's memory or address space allows); "
        "release Batch objects sooner");
  }
  kept_blocks_.emplace_back(slot_data_[slot], block_[slot]);
  block_[slot] = next;
  slot_data_[slot] = block_address(next);
  slots_[slot].held = false;
  slots_[slot].batch = -1;
  mode_->take_back(header(slot));
}

std::byte* Engine::block_address(std::uint64_t block) const {
  const auto own = static_cast<std::uint64_t>(region_layout_.num_slots());
  return block < own ? region_.base() + region_layout_.data(static_cast<int>(block))
                     : spares_->block(block - own);
}

void Engine::move_aside(int slot) {
  if (detach_allowed_) {
    detach(slot);
  } else {
    relocate(slot);
  }
}

bool Engine::can_move_held() const { return detach_allowed_ || spares_.has_value(); }

bool Engine::kept_past_newer(int slot) const {
  const SlotUse& u = slots_[slot];
  return can_move_held() && u.held && u.generation == generation_ && u.batch < delivered_;
}

std::span<std::byte> Engine::expose_region() {
  // Spare blocks only where every worker forks after them, and while each slot's
  // data is still at its place in the region (nothing ever detached: a dropped
  // detached batch leaves an unusable hole there).
  if (detach_allowed_ && !pool_.running() && !ever_detached_) {
    const std::size_t bytes = region_layout_.slot().bytes;
    const std::uint64_t memory = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                 static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    // As many as the machine's memory holds (no more batches can be kept
    // anyway), within 64 GiB of address space.
    const std::uint64_t room = std::min<std::uint64_t>(memory, 64ull << 30);
    spares_.emplace(bytes,
                    static_cast<std::size_t>(std::max<std::uint64_t>(room / bytes, 1)));
  }
  detach_allowed_ = false;
  return region_.bytes();
}

bool Engine::next_slot_held() const {
  for (int w = 0; w < ring_.workers(); ++w) {
    if (slots_[ring_.worker_slot(w, ring_.tasks_issued(w))].held) return true;
  }
  return false;
}

void Engine::skip_held_slots() {
  for (int w = 0; w < ring_.workers(); ++w) {
    // Stop after a full turn: every slot held is the consumer's overrun, which
    // fetch() reports.
    for (int n = 0;
         n < ring_.prefetch() && slots_[ring_.worker_slot(w, ring_.tasks_issued(w))].held;
         ++n) {
      ring_.skip_task(w);
    }
  }
}

void Engine::start_workers() {
  skip_held_slots();
  auto& control = *region_.at<ControlBlock>(region_layout_.control());
  // Relaxed: no worker exists yet; fork() orders everything before it.
  control.stop.store(0, std::memory_order_relaxed);
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    SlotWord& word = header(static_cast<int>(s)).state;
    if (slots_[s].held) {
      word.fetch_and(~kFlagBits, std::memory_order_relaxed);  // drop the old interrupt
    } else {
      slots_[s].batch = -1;
      word.store(kFree, std::memory_order_relaxed);
    }
  }
  if (!options_.adopt_workers.empty()) {
    adopt_workers();
    return;
  }
  if (!options_.worker_command.empty()) {
    start_programs();
    return;
  }
  WorkerConfig config;
  config.parent = getpid();
  config.rank = options_.rank;
  config.base_seed = base_seed_;
  config.start_epoch = epoch_;
  config.options = &options_;
  config.layout = &region_layout_;
  config.region = &region_;
  config.slot_data = slot_data_.data();  // the child keeps the table as it is now
  config.spares = spares_ ? &*spares_ : nullptr;
  config.fill = fill_;
  pool_.start(workers(), [this, &config](int w) {
    config.worker = w;
    config.first_task = ring_.tasks_issued(w);  // the ring continues across forks
    worker_main(config);
  });
}

std::uint64_t Engine::worker_digest() const {
  std::string what = dataset_.describe();
  const auto add = [&what](std::uint64_t v) { what += ' ' + std::to_string(v); };
  add(dataset_.size());
  for (std::size_t f = 0; f < layout_.num_fields(); ++f) {
    const FieldSpec& spec = layout_.field(f);
    what += ' ' + spec.name;
    add(static_cast<std::uint64_t>(spec.dtype));
    add(spec.variable);
    for (std::int64_t d : spec.shape) add(static_cast<std::uint64_t>(d));
  }
  const SlotGeometry& slot = region_layout_.slot();
  add(region_layout_.total_bytes());
  add(slot.batch_size);
  add(slot.bytes);
  for (std::size_t offset : slot.field_offset) add(offset);
  add(base_seed_);
  add(static_cast<std::uint64_t>(fill_.seeding));
  add(static_cast<std::uint64_t>(fill_.on_bad_sample));
  add(fill_.rank);
  add(options_.rank);  // worker streams are keyed by it, elastic or not
  add(fill_.partner_row);
  what += ' ' + std::to_string(options_.mix.mixup_alpha) + ' ' +
          std::to_string(options_.mix.cutmix_alpha) + ' ' +
          std::to_string(options_.mix.cutmix_prob);
  add(static_cast<std::uint64_t>(options_.mix.num_classes));
  return source_key(what);  // the FNV-1a hash mixtures key their sources by
}

WorkerLaunch Engine::launch_template(std::vector<int>& fds) const {
  const bool spares = spares_ && spares_->count() > 0;
  WorkerLaunch launch;
  launch.parent = getpid();
  launch.start_epoch = epoch_;
  launch.region_fd = region_.fd();
  launch.region_bytes = region_.size();
  launch.digest = worker_digest();
  fds.push_back(region_.fd());
  if (spares) {
    launch.spares_fd = spares_->fd();
    launch.spare_block_bytes = spares_->block_bytes();
    launch.spare_count = spares_->count();
    fds.push_back(spares_->fd());
  }
  return launch;
}

void Engine::start_programs() {
  std::vector<int> keep = options_.worker_fds;
  WorkerLaunch launch = launch_template(keep);
  std::vector<std::vector<std::string>> commands;
  for (int w = 0; w < workers(); ++w) {
    launch.worker = w;
    launch.first_task = ring_.tasks_issued(w);
    std::vector<std::string>& command = commands.emplace_back(options_.worker_command);
    for (std::string& arg : launch.arguments()) command.push_back(std::move(arg));
  }
  pool_.start_exec(commands, keep);
}

void Engine::adopt_workers() {
  std::vector<pid_t> pids = std::exchange(options_.adopt_workers, {});
  if (static_cast<int>(pids.size()) != workers() || !options_.worker_adopt) {
    const std::string what =
        "DataLoader: " + std::to_string(pids.size()) +
        " workers to adopt for num_workers = " + std::to_string(workers()) +
        (options_.worker_adopt ? "" : ", and no worker_adopt to tell them");
    WorkerPool orphans;  // never left unowned: killed and reaped on the way out
    orphans.adopt(std::move(pids));
    throw ConfigError(what);
  }
  pool_.adopt(std::move(pids));
  std::vector<int> fds;
  WorkerLaunch launch = launch_template(fds);
  try {
    for (int w = 0; w < workers(); ++w) {
      launch.worker = w;
      launch.first_task = ring_.tasks_issued(w);
      options_.worker_adopt(w, launch, fds);
    }
  } catch (...) {
    stop_workers(kKillNow);  // a worker never told would wait for ever
    throw;
  }
}

void Engine::serve_worker(const WorkerLaunch& launch) {
  if (launch.region_bytes != region_layout_.total_bytes() || launch.worker < 0 ||
      launch.worker >= workers() || launch.digest != worker_digest()) {
    throw ConfigError("DataLoader.serve_worker: worker " + std::to_string(launch.worker) +
                      " of a parent whose shared memory is " +
                      std::to_string(launch.region_bytes) + " bytes (digest " +
                      std::to_string(launch.digest) + "), but this loader has " +
                      std::to_string(workers()) + " workers and lays out " +
                      std::to_string(region_layout_.total_bytes()) + " bytes (digest " +
                      std::to_string(worker_digest()) +
                      "): it was not built as the parent's was (the same data set, "
                      "sample layout and options)");
  }
  // Locals: worker_main never returns, so they live as long as the worker.
  const SharedRegion region = SharedRegion::attach(launch.region_fd, launch.region_bytes);
  std::optional<SpareBlocks> spares;
  if (launch.spares_fd >= 0) {
    spares.emplace(SpareBlocks::attach(launch.spares_fd, launch.spare_block_bytes,
                                       launch.spare_count));
  }
  // The parent's detaches moved only its own views: in the file, every slot's
  // data is where the layout places it.
  std::vector<std::byte*> slot_data;
  for (int s = 0; s < region_layout_.num_slots(); ++s)
    slot_data.push_back(region.base() + region_layout_.data(s));
  WorkerConfig config;
  config.worker = launch.worker;
  config.parent = static_cast<pid_t>(launch.parent);
  config.rank = options_.rank;
  config.base_seed = base_seed_;
  config.start_epoch = launch.start_epoch;
  config.first_task = launch.first_task;
  config.options = &options_;
  config.layout = &region_layout_;
  config.region = &region;
  config.slot_data = slot_data.data();
  config.spares = spares ? &*spares : nullptr;
  config.fill = fill_;
  worker_main(config);
}

void Engine::check_forking_thread() {
  if (!pool_.running() || pool_.forking_thread_alive()) return;
  active_ = false;
  stop_workers(kKillNow);
  throw ConfigError(
      "DataLoader: the thread that forked its persistent workers has exited, and "
      "the kernel killed the workers with it (PR_SET_PDEATHSIG follows the forking "
      "thread): iterate a loader with persistent_workers from one thread that "
      "outlives it, or set persistent_workers = false");
}

void Engine::tell_workers_to_stop(std::uint32_t how) noexcept {
  auto& control = *region_.at<ControlBlock>(region_layout_.control());
  // Relaxed: interrupt() below releases it; a worker whose wait returns
  // because of the interrupt re-checks stop.
  control.stop.store(how, std::memory_order_relaxed);
  for (int s = 0; s < region_layout_.num_slots(); ++s) interrupt(header(s).state);
}

std::vector<pid_t> Engine::release_workers() {
  if (!pool_.running()) return {};
  active_ = false;  // no worker serves the epoch any more: nothing is issued
  tell_workers_to_stop(kStopHandOver);
  std::vector<pid_t> pids = pool_.release();
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s].held) slots_[s].batch = -1;
  }
  return pids;
}

void Engine::stop_workers(milliseconds grace) noexcept {
  if (!pool_.running()) return;
  tell_workers_to_stop(kStopLeave);
  pool_.stop(grace);
  // No worker is left, so no slot is in flight any more.
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s].held) slots_[s].batch = -1;
  }
}

void Engine::begin_epoch(std::uint64_t epoch, std::uint64_t first_batch,
                         std::uint64_t end_batch) {
  check_forking_thread();
  abandon_epoch();
  if (options_.batch_plan) {
    batches_.emplace(planned_batches(options_, epoch, dataset_.size()));
    num_batches_ = batches_->num_batches();
    stream_epochs_.clear();
  } else {
    EpochOrder order = sampler_->order(epoch);
    stream_epochs_ = std::move(order.stream_epochs);
    batches_.emplace(std::move(order.indices), options_.batch_size, options_.drop_last);
    if (fill_.partner_row) partners_ = sampler_->partners(epoch);
  }
  apply_skips(epoch);
  epoch_ = epoch;
  first_batch_ = std::min(first_batch, num_batches_);
  end_batch_ = std::clamp(end_batch, first_batch_, num_batches_);
  mode_->begin_epoch(epoch);
  ring_.begin_epoch(first_batch_);
  ++generation_;
  // Relaxed: tasks carry their generation and are published with release;
  // this copy only lets workers notice cancellation.
  region_.at<ControlBlock>(region_layout_.control())
      ->generation.store(generation_, std::memory_order_relaxed);
  next_issue_ = first_batch_;
  delivered_ = -1;
  skipped_ = 0;
  active_ = true;
  pump();
}

void Engine::apply_skips(std::uint64_t epoch) {
  skipped_steps_.assign(num_batches_, false);
  if (options_.skip.empty()) return;
  std::vector<std::uint64_t> gone = options_.skip.samples;
  std::sort(gone.begin(), gone.end());
  const bool per_sample = !gone.empty();
  std::vector<std::vector<Index>> kept;
  std::vector<std::uint64_t> kept_epochs;
  if (per_sample) kept.reserve(num_batches_);
  for (std::uint64_t k = 0; k < num_batches_; ++k) {
    skipped_steps_[k] = options_.skip.step(epoch, k);
    if (!per_sample) continue;
    std::vector<Index>& batch = kept.emplace_back();
    const std::span<const Index> given = batches_->batch(k);
    const std::size_t at = row_of(given);
    for (std::size_t j = 0; j < given.size(); ++j) {
      if (std::binary_search(gone.begin(), gone.end(), given[j])) continue;
      batch.push_back(given[j]);
      if (!stream_epochs_.empty()) kept_epochs.push_back(stream_epochs_[at + j]);
    }
    // Another rank's batch of the same step may keep samples: a step skipped on
    // one rank only would leave the ranks a step apart (a hang in DDP).
    if (batch.empty() && !skipped_steps_[k]) {
      throw ConfigError("skip: the skipped samples leave step " + std::to_string(k) +
                        " of epoch " + std::to_string(epoch) +
                        " without a sample on rank " + std::to_string(options_.rank) +
                        "; skip the step itself, which every rank skips");
    }
  }
  if (!per_sample) return;
  batches_.emplace(kept);
  if (!stream_epochs_.empty()) stream_epochs_ = std::move(kept_epochs);
}

std::size_t Engine::row_of(std::span<const Index> batch) const {
  return static_cast<std::size_t>(batch.data() - batches_->indices().data());
}

void Engine::pump() noexcept {
  if (!active_) return;
  // The batches that get a slot now: in order, up to the first whose slot is
  // still held or in flight, and at most one turn of the ring (each slot once).
  std::uint64_t end = next_issue_;
  while (end < end_batch_ &&
         end - next_issue_ < static_cast<std::uint64_t>(ring_.num_slots())) {
    const int s = ring_.slot_of(end);
    if (slots_[s].batch != -1) {
      if (!kept_past_newer(s)) break;
      // Kept while a later batch was taken: a batch the consumer keeps, not the
      // loop variable about to be dropped. Moved aside now, its slot's worker
      // can work ahead instead of waiting for fetch() to move it.
      try {
        move_aside(s);
      } catch (...) {
        break;  // fetch() meets the slot still held and says why
      }
    }
    ++end;
  }
  // Before the tasks: a worker that sees its task sees the read-ahead past it.
  publish_read_ahead(end);
  for (; next_issue_ < end; ++next_issue_) {
    const int s = ring_.slot_of(next_issue_);
    std::span<const Index> idx = batches_->batch(next_issue_);
    auto* out = reinterpret_cast<std::uint64_t*>(data(s) + region_layout_.slot().indices);
    for (std::size_t i = 0; i < idx.size(); ++i) out[i] = idx[i];
    if (fill_.partner_row) out[idx.size()] = partners_.indices[next_issue_];
    auto* epochs =
        reinterpret_cast<std::uint64_t*>(data(s) + region_layout_.slot().stream_epochs);
    const std::size_t at = row_of(idx);
    for (std::size_t i = 0; i < idx.size(); ++i)
      epochs[i] = stream_epochs_.empty() ? epoch_ : stream_epochs_[at + i];
    if (fill_.partner_row)
      epochs[idx.size()] =
          partners_.stream_epochs.empty() ? epoch_ : partners_.stream_epochs[next_issue_];
    SlotHeader& h = header(s);
    h.generation = generation_;
    h.epoch = epoch_;
    h.batch = next_issue_;
    // A skipped step is not delivered: with per-sample streams nothing depends on
    // reading it; a worker stream must pass over its draws as before.
    h.count = skipped_steps_[next_issue_] && options_.seeding == SeedScope::kSample
                  ? 0
                  : idx.size();
    h.block = block_[s];
    h.skipped = 0;
    h.error_index = -1;
    h.error_stage = ErrorStage::kGet;
    h.error[0] = '\0';
    h.error_type[0] = '\0';
    slots_[s].batch = static_cast<std::int64_t>(next_issue_);
    slots_[s].generation = generation_;
    ring_.issued(s);
    mode_->hand_over(h);
  }
}

void Engine::publish_read_ahead(std::uint64_t from) noexcept {
  const std::uint64_t capacity = region_layout_.read_ahead_capacity();
  if (capacity == 0 || (read_ahead_from_ == from && read_ahead_of_ == generation_))
    return;
  read_ahead_from_ = from;
  read_ahead_of_ = generation_;
  auto& block = *region_.at<ReadAhead>(region_layout_.read_ahead());
  auto* out = region_.at<std::atomic<std::uint64_t>>(region_layout_.read_ahead_indices());
  // The sequence lock's writer side (see ReadAhead): odd while writing; the
  // release fence keeps the odd value ahead of the indices, and the final
  // release store keeps the indices ahead of the even one.
  const std::uint64_t seq = block.seq.load(std::memory_order_relaxed);
  block.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::uint64_t n = 0;
  for (std::uint64_t k = from; k < end_batch_ && n < capacity; ++k) {
    for (const Index i : batches_->batch(k)) {
      if (n == capacity) break;
      out[n++].store(i, std::memory_order_relaxed);
    }
  }
  block.count.store(n, std::memory_order_relaxed);
  block.generation.store(generation_, std::memory_order_relaxed);
  block.seq.store(seq + 2, std::memory_order_release);
}

std::uint32_t Engine::await(int slot, std::uint64_t k) {
  const int w = ring_.owner(slot);
  SlotWord& word = header(slot).state;
  const bool timed = options_.timeout.count() > 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (;;) {
    std::chrono::microseconds slice = kConsumerSlice;
    if (timed) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
          deadline - std::chrono::steady_clock::now());
      slice = std::clamp(left, std::chrono::microseconds{1}, kConsumerSlice);
    }
    std::uint32_t st = wait_slice(
        word, [](std::uint32_t s) { return s != kTask; }, slice);
    if (st != kTask) return st;
    if (options_.while_waiting) {
      try {
        options_.while_waiting();
      } catch (...) {
        active_ = false;
        stop_workers(kKillNow);
        throw;
      }
    }
    if (std::optional<WorkerExit> dead = pool_.poll(w)) {
      if (dead->signal == SIGKILL) check_forking_thread();
      WorkerFailure f;
      f.worker = w;
      f.pid = dead->pid;
      f.signal = dead->signal;
      f.exit_code = dead->exit_code;
      f.batch = static_cast<long long>(k);
      active_ = false;
      stop_workers(kKillNow);
      throw WorkerError(dead->describe() + " while loading batch " + std::to_string(k) +
                            " of epoch " + std::to_string(epoch_),
                        f, ErrorCode::kWorkerDied);
    }
    if (timed && std::chrono::steady_clock::now() >= deadline) {
      const pid_t pid = pool_.pid(w);
      active_ = false;
      stop_workers(kKillNow);
      throw TimeoutError("worker " + std::to_string(w) + " (pid " + std::to_string(pid) +
                             ") did not deliver batch " + std::to_string(k) +
                             " of epoch " + std::to_string(epoch_) + " within " +
                             std::to_string(options_.timeout.count()) + " ms",
                         options_.timeout);
    }
  }
}

void Engine::throw_failed(int slot, std::uint64_t k) {
  SlotHeader& h = header(slot);
  const int w = ring_.owner(slot);
  WorkerFailure f;
  f.worker = w;
  f.pid = mode_->pid(w);
  f.batch = static_cast<long long>(k);
  f.index = h.error_index;
  f.exception_type = h.error_type;
  f.original = mode_->take_original();
  const std::string where = mode_->who(w);
  const bool init = h.error_stage == ErrorStage::kWorkerInit;
  std::string what = init ? where + ": " + h.error
                          : where + " failed on sample " + std::to_string(h.error_index) +
                                " of batch " + std::to_string(k) + ": " + h.error;
  // The slot is back in main's hands; free it for the next epoch.
  slots_[slot].batch = -1;
  mode_->take_back(h);
  if (!init) {
    // A dataset's exception: the worker lives on and serves its next task, so
    // the epoch goes on past this batch if the consumer asks for the next one.
    f.recoverable = true;
    pump();
  } else {
    abandon_epoch();
  }
  throw WorkerError(what, std::move(f),
                    init ? ErrorCode::kWorkerInitFailed : ErrorCode::kBatchFailed);
}

Batch Engine::fetch(std::uint64_t k) {
  if (!active_) throw Error("DataLoader: no epoch in progress (begin iterating first)");
  pump();
  const int s = ring_.slot_of(k);
  // The generation too: a batch of an earlier epoch still held there may have
  // the same number.
  auto issued = [&] {
    return slots_[s].batch == static_cast<std::int64_t>(k) &&
           slots_[s].generation == generation_;
  };
  if (!issued() && slots_[s].held && can_move_held()) {
    move_aside(s);
    pump();
  }
  if (!issued()) {
    throw SlotHeldError(
        "DataLoader: batch " + std::to_string(k) +
            " cannot be loaded: its slot is still held by an earlier batch, and "
            "the shared region is pinned (shared_memory() was taken), so the batch "
            "cannot be moved aside. The loader has " +
            std::to_string(region_layout_.num_slots()) +
            " slots (num_workers x prefetch); release Batch objects sooner or "
            "raise prefetch",
        k, region_layout_.num_slots());
  }
  SlotHeader& h = header(s);
  const std::uint32_t st = mode_->complete(s, k);
  if (st == kError) throw_failed(s, k);
  if (st != kReady) {
    throw Error("DataLoader: slot " + std::to_string(s) + " in unexpected state " +
                std::to_string(st) + " for batch " + std::to_string(k));
  }
  slots_[s].held = true;
  delivered_ = static_cast<std::int64_t>(k);
  skipped_ += h.skipped;
  BatchInfo info;
  info.number = k;
  info.epoch = epoch_;
  info.count = h.count;
  info.worker = ring_.owner(s);
  return Batch(shared_from_this(), s, &layout_, &region_layout_.slot(), data(s), info);
}

void Engine::release(int slot, const std::byte* data) noexcept {
  if (data != slot_data_[slot]) {  // a batch moved aside: only its memory goes
    auto copy = std::find(copies_.begin(), copies_.end(), data);
    if (copy != copies_.end()) {
      region_.free_copy(*copy, region_layout_.slot().bytes);
      copies_.erase(copy);
      return;
    }
    auto kept = std::find_if(kept_blocks_.begin(), kept_blocks_.end(),
                             [data](const auto& k) { return k.first == data; });
    if (kept != kept_blocks_.end()) {
      const auto own = static_cast<std::uint64_t>(region_layout_.num_slots());
      if (kept->second >= own) spares_->release(kept->second - own);
      free_blocks_.push_back(kept->second);  // capacity: relocate() reserved it
      kept_blocks_.erase(kept);
    }
    return;
  }
  slots_[slot].held = false;
  slots_[slot].batch = -1;
  mode_->take_back(header(slot));
  pump();
}

void Engine::end_epoch() {
  if (!active_) return;
  active_ = false;
  if (skipped_ > 0) {
    std::fprintf(stderr, "seedloader: epoch %llu: skipped %llu bad sample(s)\n",
                 static_cast<unsigned long long>(epoch_),
                 static_cast<unsigned long long>(skipped_));
  }
  if (!options_.persistent_workers) stop_workers(kStopGrace);
}

void Engine::collect_outstanding() noexcept {
  const auto deadline = std::chrono::steady_clock::now() + kCollectLimit;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].batch == -1 || slots_[s].held) continue;
    SlotWord& word = header(static_cast<int>(s)).state;
    const int w = ring_.owner(static_cast<int>(s));
    while (wait_slice(
               word, [](std::uint32_t st) { return st != kTask; }, kConsumerSlice) ==
           kTask) {
      if (pool_.poll(w) || std::chrono::steady_clock::now() >= deadline) {
        stop_workers(kKillNow);  // dead or stuck: start afresh next epoch
        return;
      }
    }
    slots_[s].batch = -1;
    publish(word, kFree);
  }
}

void Engine::abandon_epoch() noexcept {
  if (!active_) return;
  active_ = false;
  mode_->abandon();
}

void Engine::shutdown() noexcept {
  abandon_epoch();
  stop_workers(kStopGrace);
  if (!options_.adopt_workers.empty()) {
    WorkerPool never_started;  // processes to adopt are owned: killed and reaped here
    never_started.adopt(std::exchange(options_.adopt_workers, {}));
  }
}

std::vector<pid_t> Engine::worker_pids() const {
  std::vector<pid_t> pids;
  for (int w = 0; w < pool_.size(); ++w) pids.push_back(pool_.pid(w));
  return pids;
}

std::vector<double> Engine::worker_busy_seconds() const {
  std::vector<double> out;
  for (int w = 0; w < workers(); ++w) {
    const auto& b = *region_.at<WorkerBlock>(region_layout_.worker_block(w));
    // Relaxed: a statistic.
    out.push_back(static_cast<double>(b.busy_ns.load(std::memory_order_relaxed)) * 1e-9);
  }
  return out;
}

}  // namespace seedloader
