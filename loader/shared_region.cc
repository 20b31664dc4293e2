#include "loader/shared_region.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "seedloader/error.h"

namespace seedloader {

namespace {

// A close-on-exec memory file of `bytes` (sparse: memory is taken as pages are
// written), or -1 with errno set.
int memory_file(const char* name, std::size_t bytes) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// Throws Error unless the file `fd` holds exactly `bytes` (a worker's view of a
// region must be the one its parent made).
void check_file_size(int fd, std::size_t bytes, const char* what) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    throw Error(std::string("cannot read the size of the ") + what + " (fd " +
                std::to_string(fd) + "): " + std::strerror(errno));
  }
  if (static_cast<std::uint64_t>(st.st_size) != bytes) {
    throw Error(std::string("the ") + what + " (fd " + std::to_string(fd) + ") holds " +
                std::to_string(st.st_size) + " bytes where " + std::to_string(bytes) +
                " were expected");
  }
}

}  // namespace

SharedRegion::SharedRegion(std::size_t bytes)
    : SharedRegion(memory_file("seedloader-region", bytes), bytes, true) {}

SharedRegion SharedRegion::attach(int fd, std::size_t bytes) {
  try {
    check_file_size(fd, bytes, "shared region's memory file");
  } catch (...) {
    close(fd);
    throw;
  }
  return SharedRegion(fd, bytes, false);
}

SharedRegion::SharedRegion(int fd, std::size_t bytes, bool fresh)
    : size_(bytes), fd_(fd) {
  const std::string what = std::to_string(bytes) + " bytes of shared memory";
  if (fd < 0)
    throw Error("cannot make a memory file of " + what + ": " + std::strerror(errno));
  try {
    // The file by its /proc name: Boost maps files by path, and this opens the
    // same memory file afresh (the mapping outlives the extra descriptor).
    namespace bip = boost::interprocess;
    const bip::file_mapping file(("/proc/self/fd/" + std::to_string(fd)).c_str(),
                                 bip::read_write);
    region_ = std::make_unique<bip::mapped_region>(file, bip::read_write, 0, bytes);
  } catch (const boost::interprocess::interprocess_exception& e) {
    close(fd);
    fd_ = -1;
    throw Error(std::string("cannot map ") + (fresh ? "" : "the inherited ") + what +
                ": " + e.what());
  }
  base_ = static_cast<std::byte*>(region_->get_address());
}

SharedRegion::~SharedRegion() {
  for (auto [address, bytes] : views_) munmap(address, bytes);
  if (fd_ >= 0) close(fd_);
}

std::byte* SharedRegion::detach(std::byte* view, std::size_t bytes) {
  // An old size of 0 maps the same shared pages a second time (mremap(2): only
  // for shared mappings); the kernel picks the address.
  void* moved = mremap(view, 0, bytes, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED) {
    throw Error("cannot map a held batch's " + std::to_string(bytes) +
                " shared bytes a second time (mremap): " + std::strerror(errno));
  }
  auto* pages = static_cast<std::byte*>(moved);
  views_.emplace_back(pages, bytes);
  void* copy = mmap(view, bytes, PROT_READ | PROT_WRITE,
                    MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (copy == MAP_FAILED) {
    throw Error("cannot map private memory for a held batch's " + std::to_string(bytes) +
                " bytes (mmap): " + std::strerror(errno) +
                "; the loader's shared region is unusable");
  }
  std::memcpy(view, pages, bytes);
  return pages;
}

void SharedRegion::free_copy(std::byte* copy, std::size_t bytes) noexcept {
  auto outside = std::find_if(views_.begin(), views_.end(),
                              [copy](const auto& v) { return v.first == copy; });
  if (outside != views_.end()) {
    munmap(copy, bytes);
    views_.erase(outside);
    return;
  }
  // Inside the region: an inaccessible, unbacked range, so that nothing else is
  // mapped into the hole the region's own unmapping would later remove.
  mmap(copy, bytes, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
       -1, 0);
}
SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : region_(std::move(other.region_)),
      views_(std::move(other.views_)),
      base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}
SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  // Swapped: `other`'s destructor unmaps what this one held.
  std::swap(region_, other.region_);
  std::swap(base_, other.base_);
  std::swap(size_, other.size_);
  std::swap(views_, other.views_);
  std::swap(fd_, other.fd_);
  return *this;
}

SpareBlocks::SpareBlocks(std::size_t block_bytes, std::size_t count)
    : block_bytes_(block_bytes) {
  // Address space only; halved while the kernel refuses it (strict overcommit
  // accounting, an address-space limit).
  for (; count > 0 && block_bytes > 0; count /= 2) {
    if (count > SIZE_MAX / block_bytes) continue;
    if (fd_ < 0) fd_ = memory_file("seedloader-spare-blocks", 0);
    if (fd_ < 0) return;  // no memory file: no spare blocks
    if (ftruncate(fd_, static_cast<off_t>(count * block_bytes)) != 0) continue;
    void* p = mmap(nullptr, count * block_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_NORESERVE, fd_, 0);
    if (p != MAP_FAILED) {
      base_ = static_cast<std::byte*>(p);
      count_ = count;
      return;
    }
  }
}

SpareBlocks SpareBlocks::attach(int fd, std::size_t block_bytes, std::size_t count) {
  SpareBlocks blocks;
  blocks.fd_ = fd;  // closed by `blocks` whatever happens
  blocks.block_bytes_ = block_bytes;
  check_file_size(fd, block_bytes * count, "spare blocks' memory file");
  void* p = mmap(nullptr, count * block_bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    throw Error("cannot map the inherited spare blocks (" +
                std::to_string(count * block_bytes) + " bytes): " + std::strerror(errno));
  }
  blocks.base_ = static_cast<std::byte*>(p);
  blocks.count_ = count;
  return blocks;
}

SpareBlocks::~SpareBlocks() {
  if (base_ != nullptr) munmap(base_, count_ * block_bytes_);
  if (fd_ >= 0) close(fd_);
}

SpareBlocks::SpareBlocks(SpareBlocks&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      block_bytes_(other.block_bytes_),
      count_(std::exchange(other.count_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

void SpareBlocks::release(std::size_t i) noexcept {
  // Shared memory: MADV_REMOVE frees the pages for every process mapping them.
  madvise(block(i), block_bytes_, MADV_REMOVE);
}

}  // namespace seedloader
