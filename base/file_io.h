// File access: the one owner of a file descriptor (FileHandle: a data file read
// by the datasets, a cached shard and its pin, a download's part, a locked
// directory), whole-file and positioned reads. All failures throw DataError naming the
// path. Only regular files are opened: a FIFO, socket or device is rejected before
// anything waits on it. Descriptors are opened O_CLOEXEC; pread never moves a shared
// offset, so forked workers can read through inherited descriptors at the same time. They
// keep O_NONBLOCK from the open, which Linux ignores for regular files.
// Datasets read with pread rather than mapping their files: a file truncated
// while in use then gives a short read (a DataError naming it) instead of
// SIGBUS, and the page cache is still shared between workers.
// FileHandle owns its descriptor (move-only); closing it drops the flocks and
// open file description locks taken through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace seedloader {

class FileHandle {
 public:
  FileHandle() = default;
  // Opens `path` read-only. Throws DataError naming the path, also when it is
  // not a regular file (it is never waited on: a FIFO without a writer fails).
  explicit FileHandle(const std::string& path);
  // Takes over `fd` (-1: none), any descriptor; `path` names it in messages.
  // size() and read_at() need a regular file open for reading.
  FileHandle(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileHandle();
  FileHandle(FileHandle&& other) noexcept;
  FileHandle& operator=(FileHandle&& other) noexcept;
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;

  explicit operator bool() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Gives the descriptor up without closing it; the handle is empty afterwards.
  int release() { return std::exchange(fd_, -1); }
  const std::string& path() const { return path_; }
  std::uint64_t size() const;
  // Reads exactly size bytes at offset into out (resized). Throws DataError on a
  // short read or an error.
  void read_at(std::uint64_t offset, std::uint64_t size,
               std::vector<std::uint8_t>& out) const;
  // Reads exactly out.size() bytes at offset; throws DataError as above.
  void read_at(std::uint64_t offset, std::span<std::uint8_t> out) const;

 private:
  int fd_ = -1;
  std::string path_;
};

// Reads the whole regular file at `path` into out (resized). Per sample of an
// image folder, so it costs open, fstat, one read and close, and allocates
// nothing once out's capacity exceeds the file's size: the path is copied only
// into the message of a DataError. Also throws DataError when the file is
// shorter or longer than its size at open (it changed while being read).
void read_whole_file(const char* path, std::vector<std::uint8_t>& out);

}  // namespace seedloader
