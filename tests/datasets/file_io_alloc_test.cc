// The per-sample read allocates nothing once its buffer has grown: this binary
// replaces the global operator new with one that counts, on the calling
// thread, the allocations made while a test's counting window is open. It is a
// binary of its own so the replacement reaches no other test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "loader/datasets/file_io.h"
#include "tests/datasets/dataset_test_util.h"

namespace {

thread_local bool counting = false;
thread_local std::uint64_t allocations = 0;

void* allocate(std::size_t size) {
  if (counting) ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace seedloader {
namespace {

// Counts the allocations `fn` makes on this thread.
template <typename Fn>
std::uint64_t allocations_in(Fn&& fn) {
  allocations = 0;
  counting = true;
  fn();
  counting = false;
  return allocations;
}

TEST(FileIoAllocationTest, CountingSeesAnAllocation) {
  EXPECT_GE(allocations_in([] { delete new std::vector<int>(100); }), 1u);
}

TEST(FileIoAllocationTest, ReadingFilesIntoAGrownBufferAllocatesNothing) {
  testing::TempDir dir;
  // Paths long enough that a std::string copy of one would allocate.
  std::vector<std::string> paths;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < 100; ++i) {
    sizes.push_back(1 + (i * 7919) % 30000);  // 1 byte to 30 KB, in no order
    paths.push_back(dir /
                    ("class_with_a_long_name/sample_" + std::to_string(i) + ".jpg"));
    testing::write_file(paths.back(), std::vector<std::uint8_t>(
                                          sizes.back(), static_cast<std::uint8_t>(i)));
  }
  // Warm-up: one read of the largest file grows the buffer for all of them.
  const auto largest = std::max_element(sizes.begin(), sizes.end()) - sizes.begin();
  std::vector<std::uint8_t> buffer;
  read_whole_file(paths[static_cast<std::size_t>(largest)].c_str(), buffer);
  std::vector<std::size_t> read_sizes(paths.size());
  std::vector<std::uint8_t> first_bytes(paths.size());
  const std::uint64_t n = allocations_in([&] {
    for (std::size_t i = 0; i < paths.size(); ++i) {
      read_whole_file(paths[i].c_str(), buffer);
      read_sizes[i] = buffer.size();
      first_bytes[i] = buffer[0];
    }
  });
  EXPECT_EQ(n, 0u);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(read_sizes[i], sizes[i]) << paths[i];
    EXPECT_EQ(first_bytes[i], static_cast<std::uint8_t>(i)) << paths[i];
  }
}

}  // namespace
}  // namespace seedloader
