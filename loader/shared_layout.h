// The layout of a loader's shared region, and the plain structs that live in it.
//
//   [ControlBlock][WorkerBlock x W][SlotHeader x W*P][ReadAhead][slot data x W*P]
//
// Slot (w, j) belongs to worker w; its data holds, for up to batch_size samples:
// indices (u64), fingerprints (u64), the epochs the samples' streams are keyed
// by (u64: the task's epoch, or a mixture source's), lengths (u64 per sample per field),
// then each field collated as one [batch, ...shape] array, each part 64-byte aligned and
// each slot page aligned. Everything is located by offsets computed from (layout, batch
// size, W, P) in the process that maps the region, so the region itself holds no
// pointers. Atomics here are lock-free (static_assert below). RegionLayout is immutable
// after construction; the structs are shared by the main process and workers following
// the SlotState protocol (slot_state.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "loader/slot_state.h"
#include "seedloader/sample_layout.h"

namespace seedloader {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory counters must be lock-free");

inline constexpr std::uint32_t kStopLeave = 1;
inline constexpr std::uint32_t kStopHandOver = 2;

struct alignas(64) ControlBlock {
  // Set once by the main process when workers must leave (kStopLeave), or
  // leave to serve another loader (kStopHandOver). Workers read it relaxed
  // between waits: it only needs to be seen eventually, and a worker that sees
  // it touches no slot afterwards.
  std::atomic<std::uint32_t> stop;
  // Bumped by the main process when it abandons an epoch; a worker compares it
  // with its task's generation between samples and gives the task up.
  alignas(64) std::atomic<std::uint64_t> generation;
};

struct alignas(64) WorkerBlock {
  // Nanoseconds spent filling batches; written by the worker, read by main.
  // Relaxed: a statistic, nothing is published through it.
  std::atomic<std::uint64_t> busy_ns;
};
static_assert(sizeof(WorkerBlock) == 64, "one cache line per worker");

// The indices of the samples past those in the slots, for Dataset::will_read:
// `capacity` u64 atomics follow the struct. One writer (the main process, as it
// hands out batches); workers read it as a sequence lock: `seq` is odd while a
// write is under way, and a reader keeps what it copied only when `seq` was even
// and unchanged around its copy. Every word is an atomic read and written
// relaxed, so a torn copy is discarded, never undefined.
struct alignas(64) ReadAhead {
  std::atomic<std::uint64_t> seq;
  std::atomic<std::uint64_t> generation;  // the epoch's, as in ControlBlock
  std::atomic<std::uint64_t> count;       // valid indices, <= capacity
};

inline constexpr std::size_t kErrorTextBytes = 1024;
inline constexpr std::size_t kErrorTypeBytes = 256;

// Where a kError result came from. It lives in shared memory, so the
// underlying type is fixed: the header's layout does not depend on it.
enum class ErrorStage : std::uint32_t {
  kGet = 0,         // a sample's get() (error_index names the sample)
  kWorkerInit = 1,  // the user's worker_init, before any sample
};
static_assert(sizeof(ErrorStage) == sizeof(std::uint32_t));

struct alignas(64) SlotHeader {
  SlotWord state;  // the SlotState word; see slot_state.h for the protocol
  // Task fields: written by main before publish(kTask).
  std::uint64_t generation;
  std::uint64_t epoch;
  std::uint64_t batch;
  std::uint64_t count;  // samples in the batch (<= batch size)
  // Where the batch is written: data block b < W*P is slot b's own data, a
  // larger one spare block b - W*P (SpareBlocks). The slot's own unless a batch
  // the consumer keeps in a pinned slot holds that.
  std::uint64_t block;
  // Result fields: written by the worker before publish(kReady|kError).
  std::uint64_t skipped;        // bad samples replaced (BadSample::kSkip)
  std::int64_t error_index;     // kError: the sample index, -1 when none
  ErrorStage error_stage;       // kError: what failed
  char error[kErrorTextBytes];  // kError: NUL-terminated message
  // kError: the type of the data set's own exception (DatasetException), NUL
  // terminated; empty when get() threw none.
  char error_type[kErrorTypeBytes];
};
static_assert(sizeof(SlotHeader) % 64 == 0, "slot headers are whole cache lines");

// Writes a kError result's fields into `h`: `message` cut to fit; `type` whole, or
// left out when it does not fit (a cut name could name another type).
void write_error(SlotHeader& h, std::int64_t index, ErrorStage stage,
                 std::string_view message, std::string_view type = {});

// Offsets inside one slot's data; the same for every slot.
struct SlotGeometry {
  SlotGeometry() = default;
  SlotGeometry(const SampleLayout& layout, std::uint64_t batch_size);

  std::uint64_t batch_size = 0;
  std::size_t num_fields = 0;
  std::size_t indices = 0;                   // u64[batch_size]
  std::size_t fingerprints = 0;              // u64[batch_size]
  std::size_t stream_epochs = 0;             // u64[batch_size]
  std::size_t lengths = 0;                   // u64[batch_size * num_fields]
  std::vector<std::size_t> field_offset;     // per field
  std::vector<std::size_t> field_row_bytes;  // per field: one sample's bytes
  std::size_t bytes = 0;                     // the whole slot, page aligned
};

class RegionLayout {
 public:
  // Throws ConfigError when the region would not fit in size_t.
  RegionLayout(const SampleLayout& layout, std::uint64_t batch_size, int workers,
               int prefetch, std::uint64_t read_ahead = 0);

  int workers() const { return workers_; }
  int prefetch() const { return prefetch_; }
  int num_slots() const { return workers_ * prefetch_; }
  const SlotGeometry& slot() const { return slot_; }
  std::size_t total_bytes() const { return total_; }

  std::size_t control() const { return 0; }
  std::size_t worker_block(int w) const { return workers_off_ + w * sizeof(WorkerBlock); }
  // Slot s = w * prefetch + j.
  std::size_t header(int s) const { return headers_off_ + s * sizeof(SlotHeader); }
  // The ReadAhead block, and its indices (u64 atomics) right after it.
  std::size_t read_ahead() const { return read_ahead_off_; }
  std::size_t read_ahead_indices() const { return read_ahead_off_ + sizeof(ReadAhead); }
  std::uint64_t read_ahead_capacity() const { return read_ahead_capacity_; }
  std::size_t data(int s) const { return data_off_ + s * slot_.bytes; }

 private:
  int workers_;
  int prefetch_;
  SlotGeometry slot_;
  std::size_t workers_off_;
  std::size_t headers_off_;
  std::size_t read_ahead_off_;
  std::uint64_t read_ahead_capacity_;
  std::size_t data_off_;
  std::size_t total_;
};

}  // namespace seedloader
