// read_whole_file and FileHandle: what a reader gets back, and the DataErrors
// for paths that are not regular files or whose size changed under the reader.
#include "base/file_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "seedloader/error.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::contains;
using testing::TempDir;

std::string read_error(const std::string& path) {
  std::vector<std::uint8_t> out;
  try {
    read_whole_file(path.c_str(), out);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::uint8_t> pattern(std::size_t size, std::uint8_t seed) {
  std::vector<std::uint8_t> bytes(size);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<std::uint8_t>(seed + i * 31);
  return bytes;
}

// The size a file reports, and what a plain stream read of it gives, differ for
// some kernel files; those stand in for a file that changed size between the
// reader's fstat and its read, which no test can time on an ordinary file.
struct KernelFile {
  std::string path;
  std::uint64_t stat_size = 0;
  std::uint64_t content_size = 0;
};

KernelFile kernel_file(const std::string& path) {
  KernelFile f{path};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return f;
  f.stat_size = static_cast<std::uint64_t>(st.st_size);
  std::ifstream in(path, std::ios::binary);
  f.content_size = std::vector<char>(std::istreambuf_iterator<char>(in), {}).size();
  return f;
}

TEST(FileIoTest, ReadsWholeFilesOfEverySizeIntoOneBuffer) {
  TempDir dir;
  std::vector<std::uint8_t> out;
  // Shrinking and growing in turn; 0 bytes, and sizes on either side of a page.
  for (const std::size_t size : {std::size_t{5000}, std::size_t{0}, std::size_t{4096},
                                 std::size_t{1}, std::size_t{70001}, std::size_t{4095}}) {
    const std::string path = dir / ("f" + std::to_string(size));
    const std::vector<std::uint8_t> bytes =
        pattern(size, static_cast<std::uint8_t>(size));
    testing::write_file(path, bytes);
    read_whole_file(path.c_str(), out);
    EXPECT_EQ(out, bytes) << path;
  }
}

TEST(FileIoTest, MissingFileIsADataErrorNamingIt) {
  TempDir dir;
  const std::string error = read_error(dir / "absent.jpg");
  EXPECT_TRUE(contains(error, dir / "absent.jpg")) << error;
  EXPECT_TRUE(contains(error, "cannot open")) << error;
}

TEST(FileIoTest, DirectoryIsRejectedAsNotARegularFile) {
  TempDir dir;
  std::filesystem::create_directories(dir / "sub.jpg");
  const std::string error = read_error(dir / "sub.jpg");
  EXPECT_TRUE(contains(error, dir / "sub.jpg")) << error;
  EXPECT_TRUE(contains(error, "a directory, not a regular file")) << error;
}

TEST(FileIoTest, FifoIsRejectedWithoutWaitingForAWriter) {
  TempDir dir;
  testing::make_fifo(dir / "pipe.jpg");
  const std::string whole = testing::data_error_without_waiting(dir / "pipe.jpg", [&] {
    std::vector<std::uint8_t> out;
    read_whole_file((dir / "pipe.jpg").c_str(), out);
  });
  EXPECT_TRUE(contains(whole, dir / "pipe.jpg")) << whole;
  EXPECT_TRUE(contains(whole, "a FIFO, not a regular file")) << whole;
  const std::string handle = testing::data_error_without_waiting(
      dir / "pipe.jpg", [&] { FileHandle file(dir / "pipe.jpg"); });
  EXPECT_TRUE(contains(handle, "a FIFO, not a regular file")) << handle;
}

TEST(FileIoTest, FileShorterThanItsSizeIsADataErrorNamingWhereItEnds) {
  // sysfs reports a page for every attribute, whatever it holds.
  const KernelFile f = kernel_file("/sys/devices/system/cpu/online");
  if (f.content_size == 0 || f.content_size >= f.stat_size) {
    GTEST_SKIP() << f.path << " does not report more bytes than it holds here";
  }
  const std::string error = read_error(f.path);
  EXPECT_TRUE(contains(error, f.path)) << error;
  EXPECT_TRUE(contains(error, "file ends at byte " + std::to_string(f.content_size) +
                                  ", expected " + std::to_string(f.stat_size)))
      << error;
}

TEST(FileIoTest, FileLongerThanItsSizeIsADataErrorNotATruncatedRead) {
  // procfs reports 0 bytes for files that hold some.
  const KernelFile f = kernel_file("/proc/self/status");
  if (f.content_size <= f.stat_size) {
    GTEST_SKIP() << f.path << " does not hold more bytes than it reports here";
  }
  const std::string error = read_error(f.path);
  EXPECT_TRUE(contains(error, f.path)) << error;
  EXPECT_TRUE(
      contains(error, "longer than the " + std::to_string(f.stat_size) + " bytes"))
      << error;
}

TEST(FileIoTest, FileResizedDuringReadsGivesItsSizeOrADataError) {
  TempDir dir;
  const std::string path = dir / "resized.bin";
  constexpr std::uint64_t kSmall = 20000, kLarge = 40000;
  testing::write_file(path, pattern(kSmall, 3));
  std::atomic<bool> stop{false};
  std::thread resizer([&] {
    // Relaxed: a stop flag only; nothing is published through it.
    for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(i % 2 ? kLarge : kSmall)), 0);
    }
  });
  std::vector<std::uint8_t> out;
  for (int i = 0; i < 2000; ++i) {
    try {
      read_whole_file(path.c_str(), out);
      EXPECT_TRUE(out.size() == kSmall || out.size() == kLarge) << out.size();
    } catch (const DataError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(contains(what, path)) << what;
      // Shrunk mid-read, a read can end on the page past the new end.
      EXPECT_TRUE((contains(what, "file ends at byte ") &&
                   contains(what, "expected " + std::to_string(kLarge) + " bytes")) ||
                  contains(what, "longer than the " + std::to_string(kSmall) + " bytes"))
          << what;
    }
  }
  stop = true;
  resizer.join();
}

TEST(FileIoTest, HandleReadsRangesOfARegularFile) {
  TempDir dir;
  const std::vector<std::uint8_t> bytes = pattern(10000, 7);
  testing::write_file(dir / "f.bin", bytes);
  const FileHandle file(dir / "f.bin");
  EXPECT_EQ(file.size(), bytes.size());
  std::vector<std::uint8_t> out;
  file.read_at(9000, 1000, out);
  EXPECT_EQ(out, std::vector<std::uint8_t>(bytes.begin() + 9000, bytes.end()));
  try {
    file.read_at(9500, 1000, out);
    FAIL() << "a read past the end passed";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(), "file ends at byte 10000")) << e.what();
  }
}

}  // namespace
}  // namespace seedloader
