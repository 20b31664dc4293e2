#include "loader/engine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <string>

#include "loader/worker_main.h"
#include "rng/derive.h"
#include "sampler/distributed_sampler.h"

namespace seedloader {

namespace {

using std::chrono::milliseconds;

// How long the consumer sleeps between liveness checks.
constexpr std::chrono::microseconds kConsumerSlice{20000};
// How long workers get to leave on their own before SIGKILL.
constexpr milliseconds kStopGrace{1000};
// How long an abandoned epoch's tasks get to come back before the workers are
// killed instead (only ever reached by a worker stuck inside get()).
constexpr milliseconds kCollectLimit{5000};

std::unique_ptr<Sampler> make_sampler(std::uint64_t n, const LoaderOptions& o,
                                      std::uint64_t seed) {
  if (o.world_size > 1) {
    DistributedOptions d;
    d.world_size = o.world_size;
    d.rank = o.rank;
    d.shuffle = o.shuffle;
    d.seed = seed;
    return std::make_unique<DistributedSampler>(n, d);
  }
  if (o.shuffle) return std::make_unique<RandomSampler>(n, seed);
  return std::make_unique<SequentialSampler>(n);
}

std::uint64_t count_batches(std::uint64_t samples, std::uint64_t batch, bool drop_last) {
  return drop_last ? samples / batch : (samples + batch - 1) / batch;
}

// The options, validated, with the base seed filled in.
LoaderOptions resolved(const Dataset& d, LoaderOptions o) {
  validate(o, d.size());
  if (!o.seed) o.seed = draw_base_seed("DataLoader");
  return o;
}

}  // namespace

Engine::Engine(const Dataset& dataset, LoaderOptions options)
    : dataset_(dataset),
      options_(resolved(dataset, std::move(options))),
      layout_(dataset.layout()),
      base_seed_(*options_.seed),
      sampler_(make_sampler(dataset.size(), options_, base_seed_)),
      num_batches_(
          count_batches(sampler_->size(), options_.batch_size, options_.drop_last)),
      region_layout_(layout_, options_.batch_size, ring_workers(), options_.prefetch),
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
  fill_.dataset = &dataset_;
  fill_.geometry = &region_layout_.slot();
  fill_.seeding = options_.seeding;
  fill_.on_bad_sample = options_.on_bad_sample;
  fill_.base_seed = base_seed_;
  slots_.resize(region_layout_.num_slots());
  tasks_issued_.assign(ring_workers(), 0);
  task_base_.assign(ring_workers(), 0);
}

Engine::~Engine() { shutdown(); }

int Engine::slot_of(std::uint64_t k) const {
  // Batches are dealt round-robin from the epoch's first batch, so batch k
  // goes to worker k % W unless the epoch was resumed part-way.
  const std::uint64_t r = k - first_batch_;
  const int w = static_cast<int>(r % ring_workers());
  const std::uint64_t j = task_base_[w] + r / ring_workers();
  return w * options_.prefetch + static_cast<int>(j % options_.prefetch);
}

SlotHeader& Engine::header(int slot) const {
  return *region_.at<SlotHeader>(region_layout_.header(slot));
}

std::byte* Engine::data(int slot) const {
  return region_.base() + region_layout_.data(slot);
}

void Engine::start_workers() {
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
  tasks_issued_.assign(ring_workers(), 0);
  WorkerConfig config;
  config.parent = getpid();
  config.rank = options_.rank;
  config.base_seed = base_seed_;
  config.start_epoch = epoch_;
  config.options = &options_;
  config.layout = &region_layout_;
  config.region = &region_;
  config.fill = fill_;
  pool_.start(workers(), [&config](int w) {
    config.worker = w;
    worker_main(config);
  });
}

void Engine::stop_workers(milliseconds grace) noexcept {
  if (!pool_.running()) return;
  auto& control = *region_.at<ControlBlock>(region_layout_.control());
  // Relaxed: interrupt() below releases it; a worker whose wait returns
  // because of the interrupt re-checks stop.
  control.stop.store(1, std::memory_order_relaxed);
  for (int s = 0; s < region_layout_.num_slots(); ++s) interrupt(header(s).state);
  pool_.stop(grace);
  // No worker is left, so no slot is in flight any more.
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s].held) slots_[s].batch = -1;
  }
}

void Engine::begin_epoch(std::uint64_t epoch, std::uint64_t first_batch) {
  abandon_epoch();
  epoch_ = epoch;
  first_batch_ = std::min(first_batch, num_batches_);
  batches_.emplace(sampler_->indices(epoch), options_.batch_size, options_.drop_last);
  if (workers() > 0 && !pool_.running()) start_workers();
  if (workers() == 0) inline_rng_ = worker_stream(base_seed_, epoch, options_.rank, 0);
  task_base_ = tasks_issued_;
  ++generation_;
  // Relaxed: tasks carry their generation and are published with release;
  // this copy only lets workers notice cancellation.
  region_.at<ControlBlock>(region_layout_.control())
      ->generation.store(generation_, std::memory_order_relaxed);
  next_issue_ = first_batch_;
  skipped_ = 0;
  active_ = true;
  pump();
}

void Engine::pump() noexcept {
  if (!active_) return;
  while (next_issue_ < num_batches_) {
    const int s = slot_of(next_issue_);
    if (slots_[s].batch != -1) return;  // still held or in flight: in order, so stop
    const int w = s / options_.prefetch;
    std::span<const Index> idx = batches_->batch(next_issue_);
    auto* out = reinterpret_cast<std::uint64_t*>(data(s) + region_layout_.slot().indices);
    for (std::size_t i = 0; i < idx.size(); ++i) out[i] = idx[i];
    SlotHeader& h = header(s);
    h.generation = generation_;
    h.epoch = epoch_;
    h.batch = next_issue_;
    h.count = idx.size();
    h.skipped = 0;
    h.error_index = -1;
    h.error_stage = 0;
    h.error[0] = '\0';
    slots_[s].batch = static_cast<std::int64_t>(next_issue_);
    ++tasks_issued_[w];
    ++next_issue_;
    // Release (inside publish): the task above is complete before the worker
    // can see kTask. With no workers, fetch() fills the slot itself.
    if (workers() > 0) publish(h.state, kTask);
  }
}

std::uint32_t Engine::await(int slot, std::uint64_t k) {
  const int w = slot / options_.prefetch;
  SlotWord& word = header(slot).state;
  const bool timed = options_.timeout.count() > 0;
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (;;) {
    std::uint32_t st = wait_slice(
        word, [](std::uint32_t s) { return s != kTask; }, kConsumerSlice);
    if (st != kTask) return st;
    if (std::optional<WorkerExit> dead = pool_.poll(w)) {
      WorkerFailure f;
      f.worker = w;
      f.pid = dead->pid;
      f.signal = dead->signal;
      f.exit_code = dead->exit_code;
      f.batch = static_cast<long long>(k);
      active_ = false;
      stop_workers(milliseconds(0));
      throw WorkerError(dead->describe() + " while loading batch " + std::to_string(k) +
                            " of epoch " + std::to_string(epoch_),
                        f);
    }
    if (timed && std::chrono::steady_clock::now() >= deadline) {
      const pid_t pid = pool_.pid(w);
      active_ = false;
      stop_workers(milliseconds(0));
      throw TimeoutError("worker " + std::to_string(w) + " (pid " + std::to_string(pid) +
                         ") did not deliver batch " + std::to_string(k) + " of epoch " +
                         std::to_string(epoch_) + " within " +
                         std::to_string(options_.timeout.count()) + " ms");
    }
  }
}

void Engine::throw_failed(int slot, std::uint64_t k) {
  SlotHeader& h = header(slot);
  const int w = workers() == 0 ? 0 : slot / options_.prefetch;
  WorkerFailure f;
  f.worker = w;
  f.pid = workers() == 0 ? getpid() : pool_.pid(w);
  f.batch = static_cast<long long>(k);
  f.index = h.error_index;
  std::string where = workers() == 0 ? std::string("in-thread loader (num_workers=0)")
                                     : "worker " + std::to_string(w) + " (pid " +
                                           std::to_string(f.pid) + ")";
  std::string what = h.error_stage == 1
                         ? where + ": " + h.error
                         : where + " failed on sample " + std::to_string(h.error_index) +
                               " of batch " + std::to_string(k) + ": " + h.error;
  // The slot is back in main's hands; free it for the next epoch.
  slots_[slot].batch = -1;
  if (workers() > 0) publish(h.state, kFree);
  abandon_epoch();
  throw WorkerError(what, f);
}

Batch Engine::fetch(std::uint64_t k) {
  if (!active_) throw Error("DataLoader: no epoch in progress (begin iterating first)");
  pump();
  const int s = slot_of(k);
  if (slots_[s].batch != static_cast<std::int64_t>(k)) {
    throw Error("DataLoader: batch " + std::to_string(k) +
                " cannot be loaded: its slot is still held by an earlier batch. The "
                "loader has " +
                std::to_string(region_layout_.num_slots()) +
                " slots (num_workers x prefetch); release Batch objects sooner or "
                "raise prefetch");
  }
  SlotHeader& h = header(s);
  std::uint32_t st;
  if (workers() == 0) {
    FillResult r = fill_batch(fill_, data(s), epoch_, h.count, *inline_rng_, nullptr, 0);
    h.skipped = r.skipped;
    if (r.outcome == FillResult::Outcome::kFailed) {
      h.error_index = r.error_index;
      std::size_t n = std::min(r.message.size(), kErrorTextBytes - 1);
      r.message.copy(h.error, n);
      h.error[n] = '\0';
    }
    st = r.outcome == FillResult::Outcome::kDone ? kReady : kError;
  } else {
    st = await(s, k);
  }
  if (st == kError) throw_failed(s, k);
  if (st != kReady) {
    throw Error("DataLoader: slot " + std::to_string(s) + " in unexpected state " +
                std::to_string(st) + " for batch " + std::to_string(k));
  }
  slots_[s].held = true;
  skipped_ += h.skipped;
  BatchInfo info;
  info.number = k;
  info.epoch = epoch_;
  info.count = h.count;
  info.worker = workers() == 0 ? 0 : s / options_.prefetch;
  return Batch(shared_from_this(), s, &layout_, &region_layout_.slot(), data(s), info);
}

void Engine::release(int slot) noexcept {
  slots_[slot].held = false;
  slots_[slot].batch = -1;
  // Release (inside publish) orders nothing the worker needs here, but going
  // through publish wakes a worker that sleeps on this slot waiting for a task.
  if (workers() > 0 && pool_.running()) publish(header(slot).state, kFree);
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
    const int w = static_cast<int>(s) / options_.prefetch;
    while (wait_slice(
               word, [](std::uint32_t st) { return st != kTask; }, kConsumerSlice) ==
           kTask) {
      if (pool_.poll(w) || std::chrono::steady_clock::now() >= deadline) {
        stop_workers(milliseconds(0));  // dead or stuck: start afresh next epoch
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
  if (workers() == 0) {
    for (SlotUse& u : slots_) {
      if (!u.held) u.batch = -1;
    }
    return;
  }
  ++generation_;
  // Relaxed: workers poll it between samples; they publish the slot back
  // (release) whichever way they end the task, and we acquire that below. Per-
  // epoch workers see it too, so they stop between samples before being told
  // to exit, instead of finishing the batch or being killed mid-get().
  region_.at<ControlBlock>(region_layout_.control())
      ->generation.store(generation_, std::memory_order_relaxed);
  if (!options_.persistent_workers) {
    stop_workers(milliseconds(100));
    return;
  }
  collect_outstanding();
}

void Engine::shutdown() noexcept {
  abandon_epoch();
  stop_workers(kStopGrace);
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
