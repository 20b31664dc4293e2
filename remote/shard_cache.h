// ShardCache: remote shards as local files, in one cache directory that every
// worker, rank and loader on a node may share.
//
// Files, all in DIR/<16 hex digits naming the data set's URL>/:
//   NAME.<xxh64>              a complete shard. Created only by rename() once its
//                             size and XXH64 match the index, so a reader never
//                             sees a partial file; the hash in the name means a
//                             changed shard never passes for the old one.
//   NAME.<xxh64>.<bytes>.part a download in progress or cut off. Its writer holds
//                             flock(LOCK_EX) on it for the whole download: a second
//                             process wanting the shard blocks on that lock, then
//                             finds the complete file. A part nobody holds is a
//                             download that died; the next one continues it with a
//                             Range request from its size. A download that
//                             failed before its first byte leaves no part
//                             (unless its process was killed before it could
//                             delete it: an empty dead part).
// Pins: a reader that knows it will read a complete shard soon (the shards of
// its current and upcoming batches) holds it open with a read lock (an open file
// description lock, fcntl F_OFD_SETLK, apart from the downloads' flocks),
// through a ShardPin; the pin ends when the ShardPin is destroyed or its process
// exits.
// Space: under flock on DIR itself, a process about to download sums every
// complete shard and every part (at its final size) in DIR's data-set folders and
// deletes dead parts and complete shards that no one pins (it takes a
// non-blocking write lock on each before deleting it), least recently used
// first (modification time, which each use renews), until the new shard fits in
// `limit`. When that is not enough, a download ahead of the reads (Need::kAhead)
// is not made, and a read's own (Need::kNow) deletes pinned shards too, least
// recently used first: a cache smaller than the readers' working set costs
// downloads, never its bound. Deleting a shard another process is reading is
// safe: its open descriptor keeps the data (and the disk space, until it
// closes), and the next lookup downloads it again. The cache exceeds its limit
// only while every other file in it is a download in progress.
// Nothing else is created: no lock file, no shared-memory name.
// Thread- and process-safe; ShardCache holds no descriptor between calls, so a
// fork between calls leaves the child nothing of it (a fork while another thread
// is inside ensure() would leave the child holding that call's locks, as with
// any lock; a ShardPin held across a fork pins until both copies close).
// A part is fdatasync'ed before its rename: after a crash, a complete name never
// holds bytes that did not reach the disk.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "remote/object_reader.h"
#include "remote/object_url.h"

namespace seedloader::remote {

// A pin on one complete shard (see above); empty when the shard was not cached.
class ShardPin {
 public:
  ShardPin() = default;
  explicit ShardPin(int fd) : fd_(fd) {}
  ~ShardPin();
  ShardPin(ShardPin&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ShardPin& operator=(ShardPin&& other) noexcept;
  ShardPin(const ShardPin&) = delete;
  ShardPin& operator=(const ShardPin&) = delete;
  explicit operator bool() const { return fd_ >= 0; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// XXH64 (seed 0) of the first `size` bytes of the open file `fd`, read in 1 MiB
// pieces. Throws DataError naming `what` when they cannot all be read.
std::uint64_t file_xxh64(int fd, std::uint64_t size, const std::string& what);

struct ShardInfo {
  std::string name;  // file name beside the index, e.g. "000012.tar"
  std::uint64_t bytes = 0;
  std::uint64_t xxh64 = 0;
};

class ShardCache {
 public:
  // `base`: the data set's index URL (its shards are its siblings). `dir` is
  // created if missing. limit 0: no bound. Throws ConfigError when `dir` cannot
  // be created or written.
  ShardCache(ObjectUrl base, std::string dir, std::uint64_t limit,
             const ObjectReader& reader);

  // Why a shard is wanted: a read needs it now, or the reads will need it soon.
  enum class Need { kNow, kAhead };
  // The local path of `shard`'s complete file, downloaded first when absent.
  // With Need::kAhead, an empty string instead of a download that would evict a
  // pinned shard. Throws DataError naming the URL when it cannot be fetched or
  // does not match its size and hash.
  std::string ensure(const ShardInfo& shard, Need need = Need::kNow) const;
  // Whether `shard`'s complete file is in the cache now (one stat; it may be
  // evicted the moment after).
  bool has(const ShardInfo& shard) const;
  // Whether some thread or process is downloading `shard` now (its part exists
  // and is locked); an open and a non-blocking flock.
  bool downloading(const ShardInfo& shard) const;
  // Pins `shard`'s complete file, so that no eviction deletes it while the pin
  // lives; an empty pin when the shard is not cached (nothing is downloaded).
  ShardPin pin(const ShardInfo& shard) const;

  const std::string& folder() const { return folder_; }

 private:
  // Deletes least recently used files until `bytes` more fit, then opens
  // (creating it if absent) the part file `part`; returns its descriptor, or -1
  // with errno set; or, for Need::kAhead, -1 with errno ENOSPC when only deleting
  // pinned shards would make room.
  int reserve(std::uint64_t bytes, const std::string& part, Need need) const;
  // DIR/<url hash>/NAME.<xxh64>.
  std::string complete_path(const ShardInfo& shard) const;
  // DIR/<url hash>/NAME.<xxh64>.<bytes>.part.
  std::string part_path(const ShardInfo& shard) const;

  ObjectUrl base_;
  std::string dir_;     // the cache directory the limit applies to
  std::string folder_;  // dir_/<hash of the data set's URL>
  std::uint64_t limit_;
  const ObjectReader& reader_;
};

// The cache directory when none is given: $SEEDLOADER_CACHE_DIR, else
// $XDG_CACHE_HOME/seedloader, else ~/.cache/seedloader.
std::string default_cache_dir();

}  // namespace seedloader::remote
