#include "loader/datasets/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "rng/error.h"

namespace seedloader {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw DataError(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

FileHandle::FileHandle(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd_);
    fd_ = -1;
    fail(path, "not a regular file", err);
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
  out.resize(size);
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

MappedFile::MappedFile(const std::string& path) : path_(path) {
  FileHandle file(path);
  size_ = file.size();
  if (size_ == 0) return;  // mmap of length 0 is invalid; an empty span is right
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, file.fd(), 0);
  if (p == MAP_FAILED) fail(path, "cannot map", errno);
  data_ = static_cast<const std::uint8_t*>(p);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

}  // namespace seedloader
