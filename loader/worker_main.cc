#include "loader/worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "loader/slot_ring.h"
#include "loader/worker_hooks.h"
#include "loader/worker_pool.h"
#include "seedloader/derive.h"

namespace seedloader {

namespace {

// How long a worker sleeps before re-checking stop and its parent.
constexpr std::chrono::microseconds kWorkerSlice{100000};

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Appends the ReadAhead block's indices of epoch generation `generation` to
// `next`: the sequence lock's reader side (see ReadAhead). A copy torn by a
// concurrent rewrite, or one of another generation, is dropped: the next batch
// reads the block again.
void append_read_ahead(const WorkerConfig& c, std::uint64_t generation,
                       std::vector<std::uint64_t>& next) {
  const RegionLayout& layout = *c.layout;
  if (layout.read_ahead_capacity() == 0) return;
  const auto& block = *c.region->at<ReadAhead>(layout.read_ahead());
  const auto* in = c.region->at<std::atomic<std::uint64_t>>(layout.read_ahead_indices());
  const std::uint64_t seq = block.seq.load(std::memory_order_acquire);
  if (seq % 2 != 0 || block.generation.load(std::memory_order_relaxed) != generation)
    return;
  const std::size_t mine = next.size();
  const std::uint64_t n =
      std::min(block.count.load(std::memory_order_relaxed), layout.read_ahead_capacity());
  for (std::uint64_t i = 0; i < n; ++i)
    next.push_back(in[i].load(std::memory_order_relaxed));
  std::atomic_thread_fence(std::memory_order_acquire);
  if (block.seq.load(std::memory_order_relaxed) != seq) next.resize(mine);
}

// Tells the data set which samples this worker reads next: the task it starts
// now (of epoch generation `generation`), those already waiting in its later
// slots, and those of the batches no worker has yet (Dataset::will_read).
void announce_reads(const WorkerConfig& c, const SlotRing& ring, std::uint64_t task,
                    std::uint64_t generation, std::vector<std::uint64_t>& next) {
  const RegionLayout& layout = *c.layout;
  next.clear();
  for (int ahead = 0; ahead < layout.prefetch(); ++ahead) {
    const int s = ring.worker_slot(c.worker, task + ahead);
    const SlotHeader& h = *c.region->at<SlotHeader>(layout.header(s));
    // The current task was acquired by the caller; a later one is read only once
    // its state says the main process has finished writing it.
    if (ahead > 0 && load_state(h.state) != kTask) break;
    const auto* indices =
        reinterpret_cast<const std::uint64_t*>(c.block(h) + layout.slot().indices);
    next.insert(next.end(), indices, indices + h.count);
  }
  append_read_ahead(c, generation, next);
  c.fill.dataset->will_read(next);
}

[[noreturn]] void run(const WorkerConfig& c) {
  // The parent may die between fork and prctl; then getppid() already differs.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != c.parent) _exit(0);

  run_worker_start_hooks();

  const RegionLayout& layout = *c.layout;
  auto& control = *c.region->at<ControlBlock>(layout.control());
  auto& stats = *c.region->at<WorkerBlock>(layout.worker_block(c.worker));
  Rng rng = worker_stream(c.base_seed, c.start_epoch, c.rank, c.worker);

  std::string init_error;
  if (c.options->worker_init) {
    try {
      c.options->worker_init(c.worker, c.rank);
    } catch (const std::exception& e) {
      init_error = e.what();
    } catch (...) {
      init_error = "unknown exception";
    }
  }

  std::uint64_t seeded_generation = 0;  // generations start at 1
  std::vector<std::uint64_t> upcoming;  // announce_reads' list, reused
  const SlotRing ring(layout.workers(), layout.prefetch());
  for (std::uint64_t task = c.first_task;; ++task) {  // counted as main counts them
    const int s = ring.worker_slot(c.worker, task);
    SlotHeader& h = *c.region->at<SlotHeader>(layout.header(s));
    while (wait_slice(
               h.state, [](std::uint32_t st) { return st == kTask; }, kWorkerSlice) !=
           kTask) {
      // Relaxed: stop only needs to be seen eventually; a worker that sees it
      // leaves without touching shared memory again.
      if (const std::uint32_t stop = control.stop.load(std::memory_order_relaxed)) {
        if (stop == kStopHandOver && c.options->worker_handoff) {
          c.options->worker_handoff(c.worker);
          _exit(kWorkerFailedExit);  // a hand-over returns only when it failed
        }
        _exit(0);
      }
      if (getppid() != c.parent) _exit(0);
    }
    // The acquire in wait_slice makes the task fields below visible.
    if (!init_error.empty()) {
      write_error(h, -1, ErrorStage::kWorkerInit, "worker_init failed: " + init_error);
      publish(h.state, kError);
      continue;
    }
    if (h.generation != seeded_generation) {
      rng = worker_stream(c.base_seed, h.epoch, c.rank, c.worker);
      seeded_generation = h.generation;
    }
    announce_reads(c, ring, task, h.generation, upcoming);
    const std::uint64_t t0 = now_ns();
    std::byte* data = c.block(h);
    FillResult r = fill_batch(c.fill, data, h.epoch, h.batch, h.count, rng,
                              CancelWatch::on_change(control.generation, h.generation));
    stats.busy_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
    h.skipped = r.skipped;
    switch (r.outcome) {
      case FillResult::Outcome::kDone:
        publish(h.state, kReady);
        break;
      case FillResult::Outcome::kCancelled:
        publish(h.state, kCancelled);
        break;
      case FillResult::Outcome::kFailed:
        write_error(h, r.error_index, ErrorStage::kGet, r.message, r.exception_type);
        publish(h.state, kError);
        break;
    }
  }
}

}  // namespace

void worker_main(const WorkerConfig& config) {
  try {
    run(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedloader: worker %d: %s\n", config.worker, e.what());
  } catch (...) {
    std::fprintf(stderr, "seedloader: worker %d: unknown exception\n", config.worker);
  }
  _exit(kWorkerFailedExit);
}

}  // namespace seedloader
