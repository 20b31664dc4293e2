// SharedRegion: one shared mapping of a memory file (memfd_create, close-on-exec,
// mapped through boost::interprocess). Mapped before fork, it is shared by the
// main process and its forked workers at the same address; a worker started as a
// new program (LoaderOptions::worker_command) is handed the file and maps it
// wherever its kernel places it (attach()). Nothing appears in /dev/shm, so its
// size limit does not apply, and the memory goes with the last process holding
// the file or a mapping of it.
// Owns the mapping and the file, and the further views of its pages that
// detach() makes; move-only. Hold only offsets inside it, never pointers, except
// the views detach() returns. Not thread-safe: detach() and free_copy() change
// this process's mappings and are called from the one thread that owns the engine.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace boost::interprocess {
class mapped_region;
}

namespace seedloader {

class SharedRegion {
 public:
  // Maps `bytes` zero-filled bytes; throws Error naming the size on failure.
  explicit SharedRegion(std::size_t bytes);
  // Maps the region another process made, from its file `fd` (inherited across
  // an exec; this object closes it). Throws Error when the file is not `bytes`
  // long or cannot be mapped.
  static SharedRegion attach(int fd, std::size_t bytes);
  ~SharedRegion();
  SharedRegion(SharedRegion&&) noexcept;
  SharedRegion& operator=(SharedRegion&&) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {base_, size_}; }
  // The memory file, for a worker started by exec (close-on-exec: clear the
  // flag in the child that execs).
  int fd() const { return fd_; }
  // REQUIRES: offset + sizeof(T) <= size(), offset suitably aligned.
  template <typename T>
  T* at(std::size_t offset) const {
    return reinterpret_cast<T*>(base_ + offset);
  }

  // Moves the shared pages seen at `view` (in this process only) to a new
  // address, returned, and leaves at `view` a private copy of their bytes, so
  // whatever this process still reads there stays as it was while the pages are
  // written anew. Other processes' mappings are untouched: a worker forked
  // earlier still sees the pages where it saw them. Throws Error (errno named)
  // when the kernel refuses; `view` is then unchanged or, if the copy could not
  // be mapped, the error says the region is unusable.
  // REQUIRES: `view` is this region's or a view detach() returned, page aligned;
  // `bytes` is a multiple of the page size within that view.
  std::byte* detach(std::byte* view, std::size_t bytes);
  // Frees the private copy detach() left at `copy`: its memory goes back to the
  // system (a range inside the region stays reserved, unreadable, until the
  // region is unmapped). REQUIRES: `copy` is one detach() left and not freed.
  void free_copy(std::byte* copy, std::size_t bytes) noexcept;

 private:
  std::unique_ptr<boost::interprocess::mapped_region> region_;
  // Mappings outside the region that detach() made: a view of shared pages or,
  // once detached in turn, a private copy. Unmapped with the region.
  std::vector<std::pair<std::byte*, std::size_t>> views_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;

  SharedRegion(int fd, std::size_t bytes, bool fresh);
};

// SpareBlocks: `count` further blocks of `block_bytes` for slots whose batch
// the consumer keeps while the slot must stay where it is (pinned for CUDA):
// the slot's next batches go to a spare block, and the kept batch stays in the
// pinned pages. One shared mapping of a memory file (MAP_NORESERVE: a block
// takes memory only once written), made before the workers fork so that they see
// it at the same address (a worker started by exec maps the file: attach()). A
// block returned by release() gives its memory back.
// Move-only; single-threaded as SharedRegion.
class SpareBlocks {
 public:
  // At most `count` blocks, fewer (down to none) when the system refuses the
  // address space for them.
  SpareBlocks(std::size_t block_bytes, std::size_t count);
  // Maps another process's blocks from their file `fd` (this object closes it).
  // Throws Error when the file does not hold `count` blocks or cannot be mapped.
  static SpareBlocks attach(int fd, std::size_t block_bytes, std::size_t count);
  ~SpareBlocks();
  SpareBlocks(SpareBlocks&& other) noexcept;
  SpareBlocks& operator=(SpareBlocks&&) = delete;
  SpareBlocks(const SpareBlocks&) = delete;
  SpareBlocks& operator=(const SpareBlocks&) = delete;

  std::size_t count() const { return count_; }
  std::size_t block_bytes() const { return block_bytes_; }
  int fd() const { return fd_; }
  std::byte* base() const { return base_; }
  std::byte* block(std::size_t i) const { return base_ + i * block_bytes_; }
  // Frees block i's memory (it reads as zeros after); its address stays.
  void release(std::size_t i) noexcept;

 private:
  SpareBlocks() = default;

  std::byte* base_ = nullptr;
  std::size_t block_bytes_ = 0;
  std::size_t count_ = 0;
  int fd_ = -1;
};

}  // namespace seedloader
