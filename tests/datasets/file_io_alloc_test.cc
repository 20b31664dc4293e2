// The per-sample read allocates nothing once its buffer has grown: this binary
// replaces the global operator new with one that counts, on the calling
// thread, the allocations made while a test's counting window is open. It is a
// binary of its own so the replacement reaches no other test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "base/file_io.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/transforms/spec.h"
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

// OpenCV allocates a cv::Mat's pixels with posix_memalign (cv::fastMalloc):
// counted too, through glibc's own memalign underneath. Not under a sanitizer,
// whose own posix_memalign must pair with its free.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCountsOpenCv = false;
#else
constexpr bool kCountsOpenCv = true;
extern "C" void* __libc_memalign(std::size_t alignment, std::size_t size);
extern "C" int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (counting) ++allocations;
  void* p = __libc_memalign(alignment, size == 0 ? 1 : size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
#endif

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
  if (kCountsOpenCv) EXPECT_GE(allocations_in([] { cv::Mat m(10, 10, CV_8UC3); }), 1u);
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

// A whole sample of the usual training chain: read the file, decode the crop's
// window, resample, flip and normalise into the sample's row. Once a first pass
// has grown this thread's buffers, a second pass over the same files (other
// crops, other sizes) allocates nothing through operator new or OpenCV's
// allocator. (libjpeg's own per-image pools come from malloc inside libjpeg,
// which this does not count.)
TEST(FileIoAllocationTest, AFusedImageFolderSampleAllocatesNothingOnceWarm) {
  testing::TempDir dir;
  cv::RNG paint(3);
  const cv::Size sizes[] = {{320, 240}, {500, 375}, {640, 480}, {260, 300}};
  std::filesystem::create_directories(dir / "class_with_a_long_name");
  for (int i = 0; i < 12; ++i) {
    cv::Mat image(sizes[i % 4], CV_8UC3);
    paint.fill(image, cv::RNG::UNIFORM, 0, 255);
    ASSERT_TRUE(cv::imwrite(
        dir / ("class_with_a_long_name/" + std::to_string(i) + ".jpg"), image));
  }
  for (const char* spec : {"rrc:224,hflip,normalize:imagenet",
                           "rrc:224,hflip,normalize:imagenet:bf16", "rrc:224,hflip,u8"}) {
    ImageFolder data(dir.path(), parse_transform_spec(spec));
    std::vector<std::unique_ptr<testing::SampleBuffer>> rows;
    for (std::uint64_t i = 0; i < data.size(); ++i) {
      rows.push_back(std::make_unique<testing::SampleBuffer>(data.layout(), i));
    }
    Rng rng = testing::test_rng(7);
    for (int pass = 0; pass < 3; ++pass) {  // warm-up: every file, several crops
      for (std::uint64_t i = 0; i < data.size(); ++i) data.get(i, rng, rows[i]->writer());
    }
    const std::uint64_t n = allocations_in([&] {
      for (std::uint64_t i = 0; i < data.size(); ++i) data.get(i, rng, rows[i]->writer());
    });
    EXPECT_EQ(n, 0u) << spec;
  }
}

}  // namespace
}  // namespace seedloader
