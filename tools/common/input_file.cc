#include "tools/common/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "seedloader/error.h"

namespace seedloader::tools {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string bytes_text(std::uint64_t n) {
  if (n >= (std::uint64_t{1} << 20) && n % (std::uint64_t{1} << 20) == 0)
    return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

// Closes a descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& where, const std::string& path,
                            std::uint64_t limit) {
  // O_NONBLOCK: opening a FIFO without a writer would wait for one.
  const Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0)
    throw ConfigError(where + ": cannot be read (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(file.fd, &st) != 0)
    throw ConfigError(where + ": cannot be read (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode))
    throw ConfigError(where + ": " + kind_of(st.st_mode) + ", not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::string too_large =
      where + ": larger than the " + bytes_text(limit) + " such a file may hold";
  if (size > limit)
    throw ConfigError(too_large + " (" + std::to_string(size) + " bytes)");
  std::string out(static_cast<std::size_t>(size), '\0');
  std::size_t have = 0;
  for (;;) {
    if (have == out.size()) {
      // The file may have grown since fstat: read on, within the bound.
      if (out.size() > limit) throw ConfigError(too_large);
      out.resize(std::min<std::uint64_t>(limit + 1, out.size() + 65536));
    }
    const ssize_t n = ::read(file.fd, out.data() + have, out.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConfigError(where + ": cannot be read (" + std::strerror(errno) + ")");
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
  }
  if (have > limit) throw ConfigError(too_large);
  out.resize(have);
  return out;
}

}  // namespace seedloader::tools
