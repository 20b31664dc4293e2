#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "seedloader/error.h"

namespace seedloader {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw DataError(path + ": " + what + ": " + std::strerror(err));
}

// "a FIFO", "a socket", ... for the message that rejects a non-regular file.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

[[noreturn]] void fail_not_regular(const std::string& path, mode_t mode) {
  throw DataError(path + ": " + file_kind(mode) +
                  ", not a regular file; only regular files are read");
}

// Opens `path` read-only and returns the descriptor, with its stat in `st`.
// O_NONBLOCK: opening a FIFO for reading would otherwise wait, forever, for a
// writer. The type is checked on the open descriptor (no stat-then-open race)
// before anything is read. The flag stays set: open(2) says it has no effect
// on regular files, the only kind let through, so clearing it would cost two
// fcntl calls per file for nothing; should a read ever report EAGAIN anyway,
// the readers here clear it then (clear_nonblock).
int open_regular(const char* path, struct stat& st) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    // A socket cannot be opened at all (ENXIO); say what it is.
    if (::stat(path, &st) == 0 && !S_ISREG(st.st_mode))
      fail_not_regular(path, st.st_mode);
    fail(path, "cannot open", err);
  }
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_not_regular(path, st.st_mode);
  }
  return fd;
}

// For a read that reported EAGAIN: makes the descriptor blocking, so the read
// can be repeated. Forked workers share the flag, and want it cleared too.
void clear_nonblock(int fd, const char* path) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    fail(path, "cannot clear O_NONBLOCK", errno);
  }
}

// Resizes `out` for a read of `path`; a size no allocation can hold (a corrupt
// offset, a sparse file) is a DataError naming the file, not a bare bad_alloc.
void resize_for(const char* path, std::uint64_t size, std::vector<std::uint8_t>& out) {
  try {
    out.resize(size);
  } catch (const std::bad_alloc&) {
    throw DataError(std::string(path) + ": out of memory allocating " +
                    std::to_string(size) + " bytes to read it");
  } catch (const std::length_error&) {
    throw DataError(std::string(path) + ": cannot hold " + std::to_string(size) +
                    " bytes in memory to read it");
  }
}

[[noreturn]] void fail_short(const char* path, std::uint64_t end, std::uint64_t size,
                             std::uint64_t offset) {
  throw DataError(std::string(path) + ": file ends at byte " + std::to_string(end) +
                  ", expected " + std::to_string(size) + " bytes from offset " +
                  std::to_string(offset));
}

}  // namespace

FileHandle::FileHandle(const std::string& path) : path_(path) {
  struct stat st {};
  fd_ = open_regular(path.c_str(), st);
}

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

FileHandle::FileHandle(FileHandle&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

FileHandle& FileHandle::operator=(FileHandle&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

std::uint64_t FileHandle::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail(path_, "cannot stat", errno);
  return static_cast<std::uint64_t>(st.st_size);
}

void FileHandle::read_at(std::uint64_t offset, std::uint64_t size,
                         std::vector<std::uint8_t>& out) const {
  resize_for(path_.c_str(), size, out);
  read_at(offset, std::span<std::uint8_t>(out));
}

void FileHandle::read_at(std::uint64_t offset, std::span<std::uint8_t> out) const {
  const std::uint64_t size = out.size();
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd_, out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        clear_nonblock(fd_, path_.c_str());
        continue;
      }
      fail(path_, "read failed", errno);
    }
    if (n == 0) fail_short(path_.c_str(), offset + done, size, offset);
    done += static_cast<std::uint64_t>(n);
  }
}

void read_whole_file(const char* path, std::vector<std::uint8_t>& out) {
  struct stat st {};
  // No path copied: it is needed only for a message, which has it.
  const FileHandle fd(open_regular(path, st), std::string());
  const auto size = static_cast<std::uint64_t>(st.st_size);
  // One byte more than fstat's size is asked for: a read that fills it means
  // the file grew after the fstat. A read of a regular file returns less than
  // asked only at its end (POSIX), so the usual read is one call that returns
  // exactly `size` bytes, and no second read is needed to see the end.
  resize_for(path, size + 1, out);
  std::uint64_t done = 0;
  for (;;) {
    const ssize_t n = ::read(fd.fd(), out.data() + done, size + 1 - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        clear_nonblock(fd.fd(), path);
        continue;
      }
      fail(path, "read failed", errno);
    }
    if (n == 0) break;  // the end of the file
    done += static_cast<std::uint64_t>(n);
    if (done >= size) break;  // a short read (the end), or the end passed
  }
  if (done < size) fail_short(path, done, size, 0);
  if (done > size) {
    throw DataError(std::string(path) + ": file is longer than the " +
                    std::to_string(size) +
                    " bytes it had when opened; it changed while it was read");
  }
  out.resize(size);
}

}  // namespace seedloader
