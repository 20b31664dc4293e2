// SharedRegion: one anonymous shared mapping (MAP_SHARED|MAP_ANONYMOUS through
// boost::interprocess::anonymous_shared_memory). Mapped before fork, it is shared
// by the main process and its workers at the same address; nothing appears in
// /dev/shm, so its size limit does not apply and nothing outlives the processes.
// Owns the mapping; move-only. Hold only offsets inside it, never pointers.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

namespace boost::interprocess {
class mapped_region;
}

namespace seedloader {

class SharedRegion {
 public:
  // Maps `bytes` zero-filled bytes; throws Error naming the size on failure.
  explicit SharedRegion(std::size_t bytes);
  ~SharedRegion();
  SharedRegion(SharedRegion&&) noexcept;
  SharedRegion& operator=(SharedRegion&&) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {base_, size_}; }
  // REQUIRES: offset + sizeof(T) <= size(), offset suitably aligned.
  template <typename T>
  T* at(std::size_t offset) const {
    return reinterpret_cast<T*>(base_ + offset);
  }

 private:
  std::unique_ptr<boost::interprocess::mapped_region> region_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace seedloader
