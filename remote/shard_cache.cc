#include "remote/shard_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

// A descriptor this scope owns; closing it also drops any flock taken through it.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// flock that resumes after a signal.
int lock(int fd, int op) {
  int rc;
  do {
    rc = ::flock(fd, op);
  } while (rc != 0 && errno == EINTR);
  return rc;
}

// A pin's lock: an open file description lock (fcntl F_OFD_SETLK) over the whole
// file, never waited for. Separate from flock, which guards downloads: a download
// that opened its part just before another process renamed it complete may lock
// that file with flock while a reader pins it, and neither waits on the other.
bool try_pin_lock(int fd, short type) {
  struct flock whole {};
  whole.l_type = type;
  whole.l_whence = SEEK_SET;
  int rc;
  do {
    rc = ::fcntl(fd, F_OFD_SETLK, &whole);
  } while (rc != 0 && errno == EINTR);
  return rc == 0;
}

// A part file's final size, from its name NAME.<xxh64>.<bytes>.part; 0 if the
// name does not parse.
std::uint64_t part_bytes(const std::string& name) {
  const std::size_t end = name.size() - 5;  // before ".part"
  const std::size_t dot = name.rfind('.', end - 1);
  std::uint64_t v = 0;
  if (dot == std::string::npos) return 0;
  std::from_chars(name.data() + dot + 1, name.data() + end, v);
  return v;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

ShardPin::~ShardPin() {
  if (fd_ >= 0) ::close(fd_);
}

ShardPin& ShardPin::operator=(ShardPin&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("SEEDLOADER_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/seedloader";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/seedloader";
  throw ConfigError("no cache directory: set cache_dir, SEEDLOADER_CACHE_DIR or HOME");
}

ShardCache::ShardCache(ObjectUrl base, std::string dir, std::uint64_t limit,
                       const ObjectReader& reader)
    : base_(std::move(base)),
      // Normal form, so the paths built here equal the ones a listing yields.
      dir_(std::filesystem::path(dir).lexically_normal().string()),
      limit_(limit),
      reader_(reader) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  const std::string id = base_.display();
  folder_ = dir_ + "/" + hex16(XXH64(id.data(), id.size(), 0));
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec || ::access(folder_.c_str(), W_OK | X_OK) != 0) {
    throw ConfigError("cache directory " + dir_ + " cannot be created or written" +
                      (ec ? ": " + ec.message() : std::string()));
  }
}

std::string ShardCache::complete_path(const ShardInfo& shard) const {
  return folder_ + "/" + shard.name + "." + hex16(shard.xxh64);
}

std::string ShardCache::part_path(const ShardInfo& shard) const {
  return complete_path(shard) + "." + std::to_string(shard.bytes) + ".part";
}

bool ShardCache::has(const ShardInfo& shard) const {
  struct stat st {};
  return ::stat(complete_path(shard).c_str(), &st) == 0 &&
         static_cast<std::uint64_t>(st.st_size) == shard.bytes;
}

bool ShardCache::downloading(const ShardInfo& shard) const {
  const Fd fd(::open(part_path(shard).c_str(), O_RDONLY | O_CLOEXEC));
  return fd.get() >= 0 && lock(fd.get(), LOCK_SH | LOCK_NB) != 0;
}

ShardPin ShardCache::pin(const ShardInfo& shard) const {
  const std::string path = complete_path(shard);
  ShardPin pin(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!pin) return pin;
  struct stat mine {
  }, named{};
  // An eviction may hold the file's lock to delete it, or have deleted it between
  // the open and the lock: a pin on a deleted file protects nothing, so either
  // counts as not cached.
  if (!try_pin_lock(pin.fd(), F_RDLCK) || ::fstat(pin.fd(), &mine) != 0 ||
      ::stat(path.c_str(), &named) != 0 || mine.st_ino != named.st_ino ||
      mine.st_dev != named.st_dev ||
      static_cast<std::uint64_t>(mine.st_size) != shard.bytes)
    return ShardPin();
  return pin;
}

std::string ShardCache::ensure(const ShardInfo& shard, Need need) const {
  const std::string path = complete_path(shard);
  const std::string part = part_path(shard);
  const ObjectUrl url = base_.sibling(shard.name);
  const auto fail = [&](const std::string& why) {
    return DataError("shard " + url.display() + ": " + why);
  };
  for (int round = 0;; ++round) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 &&
        static_cast<std::uint64_t>(st.st_size) == shard.bytes) {
      ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used
      return path;
    }
    if (round > 100) throw fail("the cache file " + path + " keeps disappearing");
    const Fd fd(reserve(shard.bytes, part, need));
    if (fd.get() < 0 && need == Need::kAhead && errno == ENOSPC) return {};
    if (fd.get() < 0) throw fail("cannot create " + part + ": " + std::strerror(errno));
    if (lock(fd.get(), LOCK_EX) != 0) throw fail("cannot lock " + part);
    // Holding the lock. Someone may have finished the download meanwhile (the file
    // this descriptor names is then the complete shard, or a part just created).
    if (::stat(path.c_str(), &st) == 0 &&
        static_cast<std::uint64_t>(st.st_size) == shard.bytes) {
      struct stat mine {
      }, named{};
      if (::fstat(fd.get(), &mine) == 0 && ::stat(part.c_str(), &named) == 0 &&
          mine.st_ino == named.st_ino && mine.st_size == 0) {
        ::unlink(part.c_str());  // the empty part this call created
      }
      continue;
    }
    // The part may have been renamed or deleted between open and lock: then this
    // descriptor is not the file named `part`, and the round starts again.
    struct stat mine {
    }, named{};
    if (::fstat(fd.get(), &mine) != 0 || ::stat(part.c_str(), &named) != 0 ||
        mine.st_ino != named.st_ino || mine.st_dev != named.st_dev)
      continue;
    std::uint64_t have = static_cast<std::uint64_t>(mine.st_size);
    if (have > shard.bytes) {
      if (::ftruncate(fd.get(), 0) != 0) throw fail("cannot truncate " + part);
      have = 0;
    }
    try {
      reader_.download(url, fd.get(), have, shard.bytes);
    } catch (...) {
      // A part with bytes in it is kept for the next attempt to continue; an
      // empty one (the object is missing, the server refused) is not left behind.
      struct stat now {};
      if (::fstat(fd.get(), &now) == 0 && now.st_size == 0) ::unlink(part.c_str());
      throw;
    }
    const std::uint64_t got = file_xxh64(fd.get(), shard.bytes, "shard " + url.display());
    if (got != shard.xxh64) {
      ::unlink(part.c_str());
      throw fail("its XXH64 " + hex16(got) + " differs from the index's " +
                 hex16(shard.xxh64) +
                 " (the shard changed after packing, or is damaged)");
    }
    // Durable before it is named complete: after a crash, a complete name never
    // holds bytes that did not reach the disk.
    if (::fdatasync(fd.get()) != 0) throw fail("cannot sync " + part);
    if (::rename(part.c_str(), path.c_str()) != 0)
      throw fail("cannot rename " + part + ": " + std::strerror(errno));
    return path;
  }
}

int ShardCache::reserve(std::uint64_t bytes, const std::string& part, Need need) const {
  const auto open_part = [&] {
    return ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  };
  if (limit_ == 0) return open_part();
  // The part is created under the directory's lock, so the next process to count
  // sees it.
  const Fd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0 || lock(dir.get(), LOCK_EX) != 0)
    throw DataError("cache directory " + dir_ + ": cannot lock: " + std::strerror(errno));
  struct Entry {
    std::string path;
    std::uint64_t bytes;
    struct timespec used;
    bool is_part;
  };
  std::vector<Entry> entries;
  std::uint64_t used = 0;
  std::error_code ec;
  for (const auto& set : std::filesystem::directory_iterator(dir_, ec)) {
    if (!set.is_directory(ec)) continue;
    for (const auto& f : std::filesystem::directory_iterator(set.path(), ec)) {
      const std::string p = f.path().string();
      struct stat st {};
      if (p == part || ::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      const bool is_part = ends_with(p, ".part");
      const std::uint64_t size =
          is_part ? std::max<std::uint64_t>(part_bytes(p), st.st_size) : st.st_size;
      used += size;
      entries.push_back({p, size, st.st_mtim, is_part});
    }
  }
  if (used + bytes <= limit_) return open_part();
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec
                                          : a.used.tv_nsec < b.used.tv_nsec;
  });
  // First what no one holds: a dead part (a live download holds its flock) or a
  // complete shard no reader pins. Deleted under that lock, so a pin tried
  // meanwhile fails, or fails its check that the name is still its file.
  std::vector<const Entry*> pinned;
  for (const Entry& e : entries) {
    if (used + bytes <= limit_) break;
    // (A write lock needs a descriptor open for writing.)
    const Fd f(::open(e.path.c_str(), (e.is_part ? O_RDONLY : O_RDWR) | O_CLOEXEC));
    if (f.get() < 0) continue;
    if (e.is_part ? lock(f.get(), LOCK_EX | LOCK_NB) != 0
                  : !try_pin_lock(f.get(), F_WRLCK)) {
      if (!e.is_part) pinned.push_back(&e);
      continue;
    }
    if (::unlink(e.path.c_str()) == 0) used -= e.bytes;
  }
  if (used + bytes > limit_ && need == Need::kAhead) {
    errno = ENOSPC;
    return -1;
  }
  // A read that must have its shard: then pinned shards, least recently used first.
  for (const Entry* e : pinned) {
    if (used + bytes <= limit_) break;
    if (::unlink(e->path.c_str()) == 0) used -= e->bytes;
  }
  return open_part();
}

std::uint64_t file_xxh64(int fd, std::uint64_t size, const std::string& what) {
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(
      XXH64_createState(), &XXH64_freeState);
  if (!state || XXH64_reset(state.get(), 0) != XXH_OK) throw std::bad_alloc();
  std::vector<char> buffer(1 << 20);
  for (std::uint64_t at = 0; at < size;) {
    const ssize_t n =
        ::pread(fd, buffer.data(), std::min<std::uint64_t>(buffer.size(), size - at),
                static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw DataError(what + ": cannot be read at byte " + std::to_string(at) + ": " +
                      std::strerror(errno));
    }
    if (n == 0) {
      throw DataError(what + ": ends at byte " + std::to_string(at) + " of " +
                      std::to_string(size));
    }
    XXH64_update(state.get(), buffer.data(), static_cast<std::size_t>(n));
    at += static_cast<std::uint64_t>(n);
  }
  return XXH64_digest(state.get());
}

}  // namespace seedloader::remote
