// File access for datasets: an owned read-only descriptor, whole-file and
// positioned reads, and a read-only whole-file mapping. All failures throw
// DataError naming the path. Descriptors are opened O_CLOEXEC; pread never moves
// a shared offset, so forked workers can read through inherited descriptors at
// the same time. FileHandle and MappedFile own their resource (move-only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace seedloader {

class FileHandle {
 public:
  FileHandle() = default;
  // Opens `path` read-only. Throws DataError naming the path.
  explicit FileHandle(const std::string& path);
  ~FileHandle();
  FileHandle(FileHandle&& other) noexcept;
  FileHandle& operator=(FileHandle&& other) noexcept;
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  std::uint64_t size() const;
  // Reads exactly size bytes at offset into out (resized). Throws DataError on a
  // short read or an error.
  void read_at(std::uint64_t offset, std::uint64_t size,
               std::vector<std::uint8_t>& out) const;

 private:
  int fd_ = -1;
  std::string path_;
};

// Reads the whole file into out (resized; its capacity is reused).
void read_whole_file(const std::string& path, std::vector<std::uint8_t>& out);

// A read-only MAP_SHARED mapping of a whole file: the pages come from the page
// cache, so forked workers share them.
class MappedFile {
 public:
  // Throws DataError naming the path when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  std::uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

}  // namespace seedloader
