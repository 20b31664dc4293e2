// SlotOwner: what a Batch hands its slot back to when it is destroyed (the Engine).
// Internal to the loader; Batch holds one through a shared_ptr, so the owner and its
// shared region live as long as any Batch does.
#pragma once

namespace seedloader {

class SlotOwner {
 public:
  virtual ~SlotOwner() = default;
  // Called once per delivered batch, from the thread that drops the Batch.
  virtual void release(int slot) noexcept = 0;
};

}  // namespace seedloader
