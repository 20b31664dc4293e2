// Communicator: the collectives data-parallel training needs, over a fixed group
// of ranks. Element counts always come from the span's element type, never from a
// byte count. Buffers live where the implementation expects them (host memory for
// MpiCommunicator, device memory for NcclCommunicator).
// Every collective must be called by every rank, in the same order. Every blocking
// wait has a timeout and throws CommError naming the rank and the collective.
// Not thread-safe: one thread drives a communicator.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "seedloader/ddp/device.h"

namespace seedloader::ddp {

enum class ReduceOp { kSum, kAverage };
// Integer reductions: exact for every int64 value (a sum must not overflow).
enum class IntReduceOp { kSum, kMin, kMax };

// A collective in flight. The buffer it was given must outlive it.
class Work {
 public:
  virtual ~Work() = default;
  // True once the result is in the buffer; never blocks (drives progress).
  virtual bool test() = 0;
  // Blocks until the result is in the buffer, or throws CommError on timeout.
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Where the float buffers it reduces must live.
  virtual Device device() const = 0;

  // Starts an all-reduce of `data` in place and returns at once.
  virtual std::unique_ptr<Work> iallreduce(std::span<float> data, ReduceOp op) = 0;
  // Blocking all-reduce (sum or average over ranks) in place.
  void allreduce(std::span<float> data, ReduceOp op = ReduceOp::kSum) {
    iallreduce(data, op)->wait();
  }
  // Blocking all-reduce that leaves the mean over ranks in `data`.
  void allreduce_average(std::span<float> data) { allreduce(data, ReduceOp::kAverage); }

  // Blocking all-reduce of host integers (sample counts, steps, hashes) in place;
  // always host memory, like the int64 broadcast. REQUIRES: for kSum, the sum over
  // ranks fits in int64.
  void allreduce(std::span<std::int64_t> data, IntReduceOp op) {
    allreduce_int64(data, op);
  }
  // True on every rank when `flag` is true on any rank (a max of 0/1 over ranks), so
  // ranks that must stop together all learn it from the same collective.
  bool any(bool flag) {
    std::int64_t v = flag ? 1 : 0;
    allreduce(std::span<std::int64_t>(&v, 1), IntReduceOp::kMax);
    return v != 0;
  }

  // Copies `root`'s `data` into every rank's `data` (same length everywhere).
  virtual void broadcast(std::span<float> data, int root) = 0;
  // Broadcast of host integers (shapes, counts); always host memory.
  virtual void broadcast(std::span<std::int64_t> data, int root) = 0;
  virtual void barrier() = 0;

  // Gives in-flight collectives a chance to advance; called from backward hooks.
  virtual void progress() {}

 protected:
  // The integer all-reduce. Named apart from allreduce() so that overriding it
  // does not hide the float overloads in a derived class.
  virtual void allreduce_int64(std::span<std::int64_t> data, IntReduceOp op) = 0;
};

}  // namespace seedloader::ddp
