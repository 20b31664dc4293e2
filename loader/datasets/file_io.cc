#include "loader/datasets/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
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

}  // namespace

FileHandle::FileHandle(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait, forever, for a
  // writer. The type is checked on the open descriptor (no stat-then-open race)
  // before anything is read, and the flag is cleared again for regular files.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) {
    const int err = errno;
    // A socket cannot be opened at all (ENXIO); say what it is.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      fail_not_regular(path, st.st_mode);
    }
    fail(path, "cannot open", err);
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail_not_regular(path, st.st_mode);
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(path, "cannot clear O_NONBLOCK", err);
  }
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
  try {
    out.resize(size);
  } catch (const std::bad_alloc&) {
    throw DataError(path_ + ": out of memory allocating " + std::to_string(size) +
                    " bytes to read it");
  }
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
      fail(path_, "read failed", errno);
    }
    if (n == 0) {
      throw DataError(path_ + ": file ends at byte " + std::to_string(offset + done) +
                      ", expected " + std::to_string(size) + " bytes from offset " +
                      std::to_string(offset));
    }
    done += static_cast<std::uint64_t>(n);
  }
}

void read_whole_file(const std::string& path, std::vector<std::uint8_t>& out) {
  FileHandle file(path);
  file.read_at(0, file.size(), out);
}

}  // namespace seedloader
