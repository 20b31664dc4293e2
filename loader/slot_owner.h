// SlotOwner: what a Batch hands its slot back to when it is destroyed (the Engine).
// Internal to the loader; Batch holds one through a shared_ptr, so the owner and its
// shared region live as long as any Batch does.
#pragma once

#include <cstddef>

namespace seedloader {

class SlotOwner {
 public:
  virtual ~SlotOwner() = default;
  // Called once per delivered batch, from the thread that drops the Batch, with
  // the address the batch was read at: the slot's, or a private copy the owner
  // left there when it needed the slot back while the batch was kept.
  virtual void release(int slot, const std::byte* data) noexcept = 0;
};

}  // namespace seedloader
