#include "tools/seedloader_pack/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "seedloader/error.h"

namespace seedloader::pack {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

}  // namespace

void fail_sys(const std::string& what, const std::string& path) {
  throw Error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_sys("open", dir);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) fail_sys("fsync", dir);
}

OutputFile::OutputFile(std::string dir, std::string name)
    : temp_path_(dir + "/." + name + ".partial"), final_path_(dir + "/" + name) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_sys("create", temp_path_);
  hash_ = XXH64_createState();
  if (hash_ == nullptr || XXH64_reset(hash_, 0) != XXH_OK) {
    ::close(fd_);
    ::unlink(temp_path_.c_str());
    XXH64_freeState(hash_);
    throw Error("cannot start an XXH64 state for " + final_path_);
  }
  buffer_.reserve(kBufferBytes);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
  XXH64_freeState(hash_);
}

void OutputFile::write(std::span<const std::uint8_t> data) {
  XXH64_update(hash_, data.data(), data.size());
  size_ += data.size();
  if (buffer_.size() + data.size() > kBufferBytes) flush();
  if (data.size() >= kBufferBytes) {
    buffer_.assign(data.begin(), data.end());
    flush();
    return;
  }
  buffer_.insert(buffer_.end(), data.begin(), data.end());
}

void OutputFile::flush() {
  const std::uint8_t* p = buffer_.data();
  std::size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_sys("write", temp_path_);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

std::uint64_t OutputFile::commit() {
  flush();
  if (::fsync(fd_) != 0) fail_sys("fsync", temp_path_);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail_sys("close", temp_path_);
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    fail_sys("rename " + temp_path_ + " to", final_path_);
  }
  committed_ = true;
  return XXH64_digest(hash_);
}

}  // namespace seedloader::pack
