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
#include <optional>
#include <vector>

#include "seedloader/error.h"
#include "shards/index_format.h"

namespace seedloader::remote {
namespace {

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

// The cache directory's lock (flock on DIR itself), held while the returned handle
// lives. Whoever holds it never waits for another lock.
FileHandle lock_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || lock(fd, LOCK_EX) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw DataError("cache directory " + dir + ": cannot lock: " + why);
  }
  return FileHandle(fd, dir);
}

// Whether some download holds the part at `path` (its flock).
bool live_part(const std::string& path) {
  const FileHandle fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC), std::string());
  return fd.fd() >= 0 && lock(fd.fd(), LOCK_SH | LOCK_NB) != 0;
}

// Marks `path` most recently used: its access time, which eviction sorts by. The
// modification time stays what the download left, for the sidecar's check (the
// change time moves too, so the check does not use it).
constexpr struct timespec kUsedNow[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
void touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), kUsedNow, 0); }
// The same through a descriptor open for reading: the file's owner may set its
// times to now (this process created it, or another of the same user).
void touch(int fd) { ::futimens(fd, kUsedNow); }

std::string sidecar_of(const std::string& complete) { return complete + ".stat"; }

// Reads the sidecar of the complete shard `complete`: "INO SIZE MTIME_S MTIME_NS\n".
// Nothing when it is missing or does not parse.
std::optional<ShardCache::Identity> read_sidecar(const std::string& complete) {
  const FileHandle fd(::open(sidecar_of(complete).c_str(), O_RDONLY | O_CLOEXEC),
                      std::string());
  if (fd.fd() < 0) return std::nullopt;
  char text[128];
  const ssize_t n = ::read(fd.fd(), text, sizeof text - 1);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  unsigned long long ino = 0, size = 0;
  long long sec = 0, nsec = 0;
  if (std::sscanf(text, "%llu %llu %lld %lld\n", &ino, &size, &sec, &nsec) != 4)
    return std::nullopt;
  return ShardCache::Identity{ino, size, sec, nsec};
}

// Replaces the sidecar of `complete` atomically (a temporary file renamed over
// it). Best effort: without a sidecar the next check re-hashes the shard.
// REQUIRES: the directory's lock is held, so the temporary name, the same for
// every writer, is this call's alone, and any other one found is dead.
void write_sidecar(const std::string& complete, const ShardCache::Identity& id) {
  const std::string tmp = sidecar_of(complete) + ".tmp";
  char text[128];
  const int n = std::snprintf(
      text, sizeof text, "%llu %llu %lld %lld\n", static_cast<unsigned long long>(id.ino),
      static_cast<unsigned long long>(id.size), static_cast<long long>(id.mtime_s),
      static_cast<long long>(id.mtime_ns));
  const FileHandle fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644),
                      std::string());
  if (fd.fd() < 0 || ::write(fd.fd(), text, n) != n ||
      ::rename(tmp.c_str(), sidecar_of(complete).c_str()) != 0)
    ::unlink(tmp.c_str());
}

// Deletes a complete shard and its sidecar; false when the shard was not there.
bool remove_shard(const std::string& complete) {
  if (::unlink(complete.c_str()) != 0) return false;
  ::unlink(sidecar_of(complete).c_str());
  return true;
}

// The space a shard of `bytes` takes in the cache's accounting: its own and the
// most its sidecar can take, so that the files at rest stay within the limit.
std::uint64_t footprint(std::uint64_t bytes) { return bytes + ShardCache::kSidecarBytes; }

// A complete shard or a part, as eviction sees it.
struct Entry {
  std::string path;
  std::uint64_t bytes;   // its footprint(); a part's at its final size
  struct timespec used;  // a shard's last use (access time), a part's last write
  bool is_part;
};

// Every complete shard and part in `dir`'s data-set folders but `skip`, least
// recently used first. On the way it deletes what sidecar writers leave behind: a
// temporary sidecar (dead, since they write under the lock the caller holds) and
// a sidecar whose shard is gone.
// REQUIRES: the directory's lock is held.
std::vector<Entry> list_cache(const std::string& dir, const std::string& skip) {
  std::vector<Entry> entries;
  std::error_code ec;
  for (const auto& set : std::filesystem::directory_iterator(dir, ec)) {
    if (!set.is_directory(ec)) continue;
    for (const auto& f : std::filesystem::directory_iterator(set.path(), ec)) {
      const std::string p = f.path().string();
      struct stat st {};
      if (p == skip || ::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (ends_with(p, ".stat.tmp")) {
        ::unlink(p.c_str());
        continue;
      }
      if (ends_with(p, ".stat")) {
        struct stat shard {};
        if (::stat(p.substr(0, p.size() - 5).c_str(), &shard) != 0) ::unlink(p.c_str());
        continue;  // counted with their shards
      }
      const bool is_part = ends_with(p, ".part");
      const std::uint64_t size =
          is_part ? std::max<std::uint64_t>(part_bytes(p), st.st_size) : st.st_size;
      entries.push_back({p, footprint(size), is_part ? st.st_mtim : st.st_atim, is_part});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec
                                          : a.used.tv_nsec < b.used.tv_nsec;
  });
  return entries;
}

// Deletes `entries`, in their order, until `used` + `bytes` fit in `limit`: first
// what no one holds, a dead part (a live download holds its flock) or a complete
// shard no reader pins, then, with `pinned_too`, pinned shards, never a live
// part. Deleted under the directory's lock, so a pin tried meanwhile fails, or
// fails its check that the name is still its file; deleting a shard another
// process has open is safe, its descriptor keeps the data. Returns whether they
// fit. REQUIRES: the directory's lock is held.
bool evict(const std::vector<Entry>& entries, std::uint64_t& used, std::uint64_t bytes,
           std::uint64_t limit, bool pinned_too) {
  std::vector<const Entry*> pinned;
  for (const Entry& e : entries) {
    if (used + bytes <= limit) break;
    // (A write lock needs a descriptor open for writing.)
    const FileHandle f(
        ::open(e.path.c_str(), (e.is_part ? O_RDONLY : O_RDWR) | O_CLOEXEC),
        std::string());
    if (f.fd() < 0) continue;
    if (e.is_part ? lock(f.fd(), LOCK_EX | LOCK_NB) != 0
                  : !try_pin_lock(f.fd(), F_WRLCK)) {
      if (!e.is_part) pinned.push_back(&e);
      continue;
    }
    if (e.is_part ? ::unlink(e.path.c_str()) == 0 : remove_shard(e.path)) used -= e.bytes;
  }
  for (const Entry* e : pinned) {
    if (!pinned_too || used + bytes <= limit) break;
    if (remove_shard(e->path)) used -= e->bytes;
  }
  return used + bytes <= limit;
}

ShardCache::Identity identity_of(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec),
          static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
}

}  // namespace

std::string default_cache_dir() {
  if (const char* d = std::getenv("SEEDLOADER_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/seedloader";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/seedloader";
  throw ConfigError("no cache directory: set cache_dir, SEEDLOADER_CACHE_DIR or HOME");
}

ShardCache::ShardCache(ObjectUrl base, std::string dir, std::uint64_t limit,
                       const ObjectReader& reader, Verify verify)
    : base_(std::move(base)),
      // Normal form, so the paths built here equal the ones a listing yields.
      dir_(std::filesystem::path(dir).lexically_normal().string()),
      limit_(limit),
      verify_(verify),
      reader_(reader) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  const std::string id = base_.display();
  folder_ = dir_ + "/" + shards::hex64(XXH64(id.data(), id.size(), 0));
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec || ::access(folder_.c_str(), W_OK | X_OK) != 0) {
    throw ConfigError("cache directory " + dir_ + " cannot be created or written" +
                      (ec ? ": " + ec.message() : std::string()));
  }
}

std::string ShardCache::complete_path(const shards::ShardEntry& shard) const {
  return folder_ + "/" + shard.name + "." + shards::hex64(shard.xxh64);
}

std::string ShardCache::part_path(const shards::ShardEntry& shard) const {
  return complete_path(shard) + "." + std::to_string(shard.bytes) + ".part";
}

bool ShardCache::downloading(const shards::ShardEntry& shard) const {
  const FileHandle fd(::open(part_path(shard).c_str(), O_RDONLY | O_CLOEXEC),
                      std::string());
  return fd.fd() >= 0 && lock(fd.fd(), LOCK_SH | LOCK_NB) != 0;
}

FileHandle ShardCache::pin(const shards::ShardEntry& shard) const {
  const std::string path = complete_path(shard);
  FileHandle pin(::open(path.c_str(), O_RDONLY | O_CLOEXEC), path);
  if (!pin) return pin;
  struct stat mine {
  }, named{};
  // An eviction may hold the file's lock to delete it, or have deleted it between
  // the open and the lock: a pin on a deleted file protects nothing, so either
  // counts as not cached.
  if (!hold(pin) || ::fstat(pin.fd(), &mine) != 0 || ::stat(path.c_str(), &named) != 0 ||
      mine.st_ino != named.st_ino || mine.st_dev != named.st_dev ||
      static_cast<std::uint64_t>(mine.st_size) != shard.bytes)
    return FileHandle();
  // Checked as a lookup checks it, since the pin's descriptor serves the reads: a
  // changed shard is deleted and not pinned, and the read downloads it again.
  if (!trusted(path, mine, shard) || !checked(path, identity_of(mine)))
    return FileHandle();
  touch(pin.fd());  // most recently used, once for all the reads it serves
  return pin;
}

bool ShardCache::hold(const FileHandle& file) { return try_pin_lock(file.fd(), F_RDLCK); }

bool ShardCache::unchanged(const FileHandle& file) const {
  if (verify_ == Verify::kNone) return true;
  struct stat st {};
  return ::fstat(file.fd(), &st) == 0 && checked(file.path(), identity_of(st));
}

std::string ShardCache::ensure(const shards::ShardEntry& shard, Need need) const {
  return locate(shard, need, nullptr);
}

FileHandle ShardCache::open(const shards::ShardEntry& shard) const {
  FileHandle file;
  locate(shard, Need::kNow, &file);
  return file;
}

std::string ShardCache::locate(const shards::ShardEntry& shard, Need need,
                               FileHandle* opened) const {
  const std::string path = complete_path(shard);
  const std::string part = part_path(shard);
  const ObjectUrl url = base_.sibling(shard.name);
  const auto fail = [&](const std::string& why) {
    return DataError("shard " + url.display() + ": " + why);
  };
  for (int round = 0;; ++round) {
    struct stat st {};
    // With `opened`, the stat checked is the open descriptor's: the file handed
    // over is the one found trusted, whatever is renamed or deleted meanwhile.
    FileHandle found(opened ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC) : -1, path);
    const bool exists = opened ? found.fd() >= 0 && ::fstat(found.fd(), &st) == 0
                               : ::stat(path.c_str(), &st) == 0;
    if (exists && static_cast<std::uint64_t>(st.st_size) == shard.bytes) {
      if (trusted(path, st, shard) && (!opened || checked(path, identity_of(st)))) {
        // Most recently used.
        if (opened) {
          touch(found.fd());
          *opened = std::move(found);
        } else {
          touch(path);
        }
        return path;
      }
      // Deleted as changed, or replaced meanwhile: look again.
      if (round > 100) throw fail("the cache file " + path + " keeps changing");
      continue;
    }
    if (round > 100) throw fail("the cache file " + path + " keeps disappearing");
    const int reserved = reserve(footprint(shard.bytes), part, need);
    const int reserve_error = errno;  // before anything else can change it
    if (reserved < 0 && need == Need::kAhead && reserve_error == ENOSPC) return {};
    if (reserved < 0)
      throw fail("cannot create " + part + ": " + std::strerror(reserve_error));
    const FileHandle fd(reserved, std::string());  // messages name `part`
    if (lock(fd.fd(), LOCK_EX) != 0) throw fail("cannot lock " + part);
    // Holding the lock. Someone may have finished the download meanwhile (the file
    // this descriptor names is then the complete shard, or a part just created).
    if (::stat(path.c_str(), &st) == 0 &&
        static_cast<std::uint64_t>(st.st_size) == shard.bytes) {
      struct stat mine {
      }, named{};
      if (::fstat(fd.fd(), &mine) == 0 && ::stat(part.c_str(), &named) == 0 &&
          mine.st_ino == named.st_ino && mine.st_size == 0) {
        ::unlink(part.c_str());  // the empty part this call created
      }
      continue;
    }
    // The part may have been renamed or deleted between open and lock: then this
    // descriptor is not the file named `part`, and the round starts again.
    struct stat mine {
    }, named{};
    if (::fstat(fd.fd(), &mine) != 0 || ::stat(part.c_str(), &named) != 0 ||
        mine.st_ino != named.st_ino || mine.st_dev != named.st_dev)
      continue;
    std::uint64_t have = static_cast<std::uint64_t>(mine.st_size);
    if (have > shard.bytes) {
      if (::ftruncate(fd.fd(), 0) != 0) throw fail("cannot truncate " + part);
      have = 0;
    }
    try {
      reader_.download(url, fd.fd(), have, shard.bytes);
    } catch (...) {
      // A part with bytes in it is kept for the next attempt to continue; an
      // empty one (the object is missing, the server refused) is not left behind.
      struct stat now {};
      if (::fstat(fd.fd(), &now) == 0 && now.st_size == 0) ::unlink(part.c_str());
      throw;
    }
    const std::uint64_t got =
        shards::file_xxh64(fd.fd(), shard.bytes, "shard " + url.display());
    if (got != shard.xxh64) {
      ::unlink(part.c_str());
      throw fail("its XXH64 " + shards::hex64(got) + " differs from the index's " +
                 shards::hex64(shard.xxh64) +
                 " (the shard changed after packing, or is damaged)");
    }
    // Durable before it is named complete: after a crash, a complete name never
    // holds bytes that did not reach the disk.
    if (::fdatasync(fd.fd()) != 0) throw fail("cannot sync " + part);
    struct stat done {};
    if (::fstat(fd.fd(), &done) != 0) throw fail("cannot stat " + part);
    {
      // Under the directory's lock: a listing sees the sidecar only with its
      // shard, and the bound holds again when this returns (while other
      // downloads are in progress, their parts may still exceed it).
      const FileHandle dir = lock_dir(dir_);
      write_sidecar(path, identity_of(done));
      if (::rename(part.c_str(), path.c_str()) != 0)
        throw fail("cannot rename " + part + ": " + std::strerror(errno));
      touch(path);
      if (limit_ != 0 && !trim(path, footprint(shard.bytes), need)) return {};
      // Still under the lock that every deletion takes: the name is this file.
      if (opened) {
        *opened = FileHandle(::open(path.c_str(), O_RDONLY | O_CLOEXEC), path);
        if (!*opened) throw fail("cannot open " + path + ": " + std::strerror(errno));
      }
    }
    remember(path, identity_of(done));
    return path;
  }
}

bool ShardCache::trusted(const std::string& path, const struct stat& st,
                         const shards::ShardEntry& shard) const {
  if (verify_ == Verify::kNone) return true;
  const Identity now = identity_of(st);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = checked_.find(path);
    if (it != checked_.end() && it->second == now) return true;
  }
  if (verify_ == Verify::kStat && read_sidecar(path) == now) {
    remember(path, now);
    return true;
  }
  // Re-hashed in full (not under any lock: processes that find the same shard
  // unchecked at once each hash it).
  const FileHandle fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC), std::string());
  struct stat mine {};
  if (fd.fd() < 0 || ::fstat(fd.fd(), &mine) != 0) return false;  // evicted meanwhile
  const bool good =
      static_cast<std::uint64_t>(mine.st_size) == shard.bytes &&
      shards::file_xxh64(fd.fd(), shard.bytes, "cached shard " + path) == shard.xxh64;
  // Renames and deletions happen under the directory's lock: under it, the name
  // still being this file means it is the file just hashed.
  const FileHandle dir = lock_dir(dir_);
  struct stat named {};
  if (::stat(path.c_str(), &named) != 0 || named.st_ino != mine.st_ino ||
      named.st_dev != mine.st_dev)
    return false;  // replaced or evicted meanwhile
  if (!good) {
    // Changed or damaged since its download; it is a cache: fetched again.
    if (!remove_shard(path)) {
      throw DataError(
          "cached shard " + path +
          " differs from its index and cannot be deleted: " + std::strerror(errno));
    }
    return false;
  }
  write_sidecar(path, identity_of(mine));
  remember(path, identity_of(mine));
  return true;
}

bool ShardCache::checked(const std::string& path, const Identity& id) const {
  if (verify_ == Verify::kNone) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = checked_.find(path);
  return it != checked_.end() && it->second == id;
}

void ShardCache::remember(const std::string& path, const Identity& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  checked_[path] = id;
}

bool ShardCache::trim(const std::string& done, std::uint64_t bytes, Need need) const {
  std::vector<Entry> entries = list_cache(dir_, done);
  // Not the parts of downloads in progress: each trims the cache when it ends.
  std::erase_if(entries, [](const Entry& e) { return e.is_part && live_part(e.path); });
  std::uint64_t used = bytes;
  for (const Entry& e : entries) used += e.bytes;
  if (evict(entries, used, 0, limit_, need == Need::kNow) || need == Need::kNow)
    return true;
  remove_shard(done);  // speculative: the shards the reads pinned come first
  return false;
}

int ShardCache::reserve(std::uint64_t bytes, const std::string& part, Need need) const {
  const auto open_part = [&] {
    const int fd = ::open(part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    // Locked at once, while the directory's lock is held (when there is a limit):
    // a trim counting the cache in between would take the part for a dead one.
    // Held by another download, it is left for the caller's blocking lock.
    if (fd >= 0) lock(fd, LOCK_EX | LOCK_NB);
    return fd;
  };
  if (limit_ == 0) return open_part();
  // The part is created under the directory's lock, so the next process to count
  // sees it. Live downloads' parts count at their final size: their space is
  // theirs.
  const FileHandle dir = lock_dir(dir_);
  const std::vector<Entry> entries = list_cache(dir_, part);
  std::uint64_t used = 0;
  for (const Entry& e : entries) used += e.bytes;
  // A read that must have its shard deletes pinned shards too; a download ahead
  // of the reads is not made.
  if (!evict(entries, used, bytes, limit_, need == Need::kNow) && need == Need::kAhead) {
    errno = ENOSPC;
    return -1;
  }
  return open_part();
}

}  // namespace seedloader::remote
