// worker_main: the body of one forked worker process. It arms PR_SET_PDEATHSIG
// (and re-checks getppid(), in case the parent died before that), runs the
// worker start hooks and worker_init, then serves its slots in order: task j
// sits in slot j % prefetch; it waits (timed, so it notices stop requests and a
// dead parent) for kTask, fills the batch, publishes the result, and moves on.
// It never returns: it leaves with _exit, skipping atexit handlers and
// destructors that belong to the parent. It never touches CUDA.
// PR_SET_PDEATHSIG fires when the *thread* that forked the worker ends, so
// drive a DataLoader from a thread that lives as long as the loader (the engine
// turns a loss of persistent workers that way into a ConfigError).
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "loader/batch_filler.h"
#include "loader/shared_layout.h"
#include "loader/shared_region.h"
#include "seedloader/loader_options.h"

namespace seedloader {

struct WorkerConfig {
  int worker = 0;
  pid_t parent = 0;
  std::uint64_t rank = 0;
  std::uint64_t base_seed = 0;
  std::uint64_t start_epoch = 0;  // seeds the stream worker_init runs after
  std::uint64_t first_task = 0;   // SlotRing::tasks_issued(worker) at the fork
  const LoaderOptions* options = nullptr;
  const RegionLayout* layout = nullptr;
  const SharedRegion* region = nullptr;
  // Where each slot's data is in this process (Engine::slot_data_ at the fork):
  // in the region unless the consumer had detached it before.
  std::byte* const* slot_data = nullptr;
  // The spare blocks a slot's header may name (SlotHeader::block), or null.
  const SpareBlocks* spares = nullptr;
  FillContext fill;

  // The data block header `h` names for its task. Without spare blocks it is
  // always the slot's own (slot_data); with them no slot was ever detached, so
  // a slot's own data is where the region places it.
  std::byte* block(const SlotHeader& h) const {
    const auto own = static_cast<std::uint64_t>(layout->num_slots());
    if (spares == nullptr) return slot_data[h.block];
    return h.block < own ? region->base() + layout->data(static_cast<int>(h.block))
                         : spares->block(h.block - own);
  }
};

[[noreturn]] void worker_main(const WorkerConfig& config);

}  // namespace seedloader
