#include "loader/shared_region.h"

#include <sys/mman.h>

#include <algorithm>
#include <boost/interprocess/anonymous_shared_memory.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "seedloader/error.h"

namespace seedloader {

SharedRegion::SharedRegion(std::size_t bytes) {
  try {
    region_ = std::make_unique<boost::interprocess::mapped_region>(
        boost::interprocess::anonymous_shared_memory(bytes));
  } catch (const boost::interprocess::interprocess_exception& e) {
    throw Error("cannot map " + std::to_string(bytes) +
                " bytes of anonymous shared memory: " + e.what());
  }
  base_ = static_cast<std::byte*>(region_->get_address());
  size_ = bytes;
}

SharedRegion::~SharedRegion() {
  for (auto [address, bytes] : views_) munmap(address, bytes);
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
SharedRegion::SharedRegion(SharedRegion&&) noexcept = default;
SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  // Swapped: `other`'s destructor unmaps what this one held.
  std::swap(region_, other.region_);
  std::swap(base_, other.base_);
  std::swap(size_, other.size_);
  std::swap(views_, other.views_);
  return *this;
}

SpareBlocks::SpareBlocks(std::size_t block_bytes, std::size_t count)
    : block_bytes_(block_bytes) {
  // Address space only; halved while the kernel refuses it (strict overcommit
  // accounting, an address-space limit).
  for (; count > 0 && block_bytes > 0; count /= 2) {
    if (count > SIZE_MAX / block_bytes) continue;
    void* p = mmap(nullptr, count * block_bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      base_ = static_cast<std::byte*>(p);
      count_ = count;
      return;
    }
  }
}

SpareBlocks::~SpareBlocks() {
  if (base_ != nullptr) munmap(base_, count_ * block_bytes_);
}

SpareBlocks::SpareBlocks(SpareBlocks&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      block_bytes_(other.block_bytes_),
      count_(std::exchange(other.count_, 0)) {}

void SpareBlocks::release(std::size_t i) noexcept {
  // Shared memory: MADV_REMOVE frees the pages for every process mapping them.
  madvise(block(i), block_bytes_, MADV_REMOVE);
}

}  // namespace seedloader
