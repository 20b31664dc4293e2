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
//   NAME.<xxh64>.stat         the complete shard's identity when it was
//                             downloaded or last hashed: inode, size and
//                             modification time (written to .stat.tmp and
//                             renamed, under DIR's lock; deleted with its
//                             shard). Space counts every shard with the most a
//                             sidecar can hold (kSidecarBytes), whether or not
//                             it has one yet.
// Checks (Verify, when a ShardCache first finds a complete shard, and again
// whenever its stat differs from what that ShardCache last checked, e.g. after
// another process downloaded it again):
//   kStat (the default) compares the shard's inode, size and modification time
//     (nanoseconds) with its sidecar: one stat and one small read. It catches a
//     rewrite in place or a replacement through the file system; it misses a
//     change whose writer restored the modification time (touch -d, utimensat,
//     tar -x, rsync -t), one within the file system's timestamp granularity of
//     the download's last write, and damage below the file system (a failing
//     disk). A shard without a sidecar (from an older cache) or that differs is
//     re-hashed in full.
//   kHash re-hashes the whole shard (one sequential read): it catches any change
//     of its bytes as the page cache shows them.
//   kNone trusts the file: a changed shard is served as it is.
// A re-hash that matches the index rewrites the sidecar; one that does not
// deletes the shard, and the lookup downloads it again.
// Pins: a reader that knows it will read a complete shard soon (the shards of
// its current and upcoming batches) holds it open with a read lock (an open file
// description lock, fcntl F_OFD_SETLK, apart from the downloads' flocks): the
// FileHandle pin() returns, whose descriptor also serves the reads; the pin ends
// when that handle closes or its process exits. A pin renews the shard's recency
// once, so reading a pinned shard's samples through it costs no system call but
// the reads.
// Space: under flock on DIR itself, a process about to download sums every
// complete shard and every part (at its final size), each with its sidecar's
// kSidecarBytes, in DIR's data-set folders and deletes dead parts and complete
// shards that no one pins (it takes a non-blocking write lock on each before
// deleting it), least recently used first (access time, which each use renews;
// the modification time is the sidecar's), until the new shard fits in `limit`. When that
// is not enough, a download ahead of the reads (Need::kAhead) is not made, and a read's
// own (Need::kNow) deletes pinned shards too, least recently used first: a cache smaller
// than the readers' working set costs downloads, never its bound. Downloads admitted at
// once may each have counted the other's part and still go ahead (a read's own must), so
// each, once renamed complete, takes the lock again and trims: it sums the complete
// shards and dead parts (not the parts of downloads still in progress, which trim when
// they end) and deletes as above, never the shard it just completed, except that a
// download ahead that would need a pinned shard's space deletes its own shard and returns
// nothing. Deleting a shard another process is reading is safe: its open descriptor keeps
// the data (and the disk space, until it closes), and the next lookup downloads it again.
// Readers take that descriptor from open(), which opens the file it checked, so no
// deletion falls between their lookup and their open. So the cache exceeds its limit only
// by the parts of downloads in progress, for the moment between a rename and its trim,
// and by the part a failed download leaves for the next attempt to continue (deleted by
// the next download that needs its space); once downloads end, complete shards and their
// sidecars fit in the limit, whatever the number of workers, ranks or loaders (given a
// limit at least the largest shard plus kSidecarBytes). Nothing else is created: no lock
// file, no shared-memory name. Thread- and process-safe; ShardCache holds no descriptor
// between calls (only, under a mutex, the identities of the shards it has checked, which
// a forked child inherits and need not check again), so a fork between calls leaves the
// child nothing of it (a fork while another thread is inside ensure() would leave
// the child holding that call's locks, as with any lock; a pin held across
// a fork pins until both copies close).
// A part is fdatasync'ed before its rename: after a crash, a complete name never
// holds bytes that did not reach the disk.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <sys/stat.h>

#include "base/file_io.h"
#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "shards/index_format.h"

namespace seedloader::remote {

class ShardCache {
 public:
  // How a complete shard found in the cache is checked (see above).
  enum class Verify { kStat, kHash, kNone };
  // The most bytes a sidecar holds ("INO SIZE MTIME_S MTIME_NS\n", four 64-bit
  // numbers of up to 20 characters, each with its separator): what each shard
  // adds to its own size in the cache's accounting, so that the files at rest
  // never exceed the limit.
  static constexpr std::uint64_t kSidecarBytes = 4 * 21;
  // A file's identity for the kStat check, as its sidecar records it.
  struct Identity {
    std::uint64_t ino = 0;
    std::uint64_t size = 0;
    std::int64_t mtime_s = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Identity&) const = default;
  };

  // `base`: the data set's index URL (its shards are its siblings). `dir` is
  // created if missing. limit 0: no bound. Throws ConfigError when `dir` cannot
  // be created or written.
  ShardCache(ObjectUrl base, std::string dir, std::uint64_t limit,
             const ObjectReader& reader, Verify verify = Verify::kStat);
  ShardCache(const ShardCache&) = delete;
  ShardCache& operator=(const ShardCache&) = delete;

  // Why a shard is wanted: a read needs it now, or the reads will need it soon.
  enum class Need { kNow, kAhead };
  // The local path of `shard`'s complete file, downloaded first when absent, or
  // again when the check (Verify) finds the cached file changed. With
  // Need::kAhead, an empty string instead of a download that would evict a
  // pinned shard (or, after it, keep one evicted). Throws DataError naming the
  // URL when it cannot be fetched or does not match its size and hash.
  std::string ensure(const shards::ShardEntry& shard, Need need = Need::kNow) const;
  // As ensure(shard, Need::kNow), and opens the file it checked: an eviction by
  // another process after the lookup cannot take the shard from the caller (its
  // descriptor keeps the data), where opening ensure()'s path afterwards may find
  // it deleted. Throws as ensure() does.
  FileHandle open(const shards::ShardEntry& shard) const;
  // Whether some thread or process is downloading `shard` now (its part exists
  // and is locked); an open and a non-blocking flock.
  bool downloading(const shards::ShardEntry& shard) const;
  // Pins `shard`'s complete file, so that no eviction deletes it while the
  // returned handle is open, and marks it most recently used; an empty handle
  // when the shard is not cached (nothing is downloaded) or fails its check
  // (Verify; it is deleted then, as a lookup would).
  FileHandle pin(const shards::ShardEntry& shard) const;
  // Pins the complete shard open as `file` (from open()) as pin() does; false
  // when an eviction holds it (it may be deleted; the descriptor still reads it).
  static bool hold(const FileHandle& file);
  // Whether the complete shard open as `file` (from pin() or open()) still has
  // the identity it was checked with (one fstat; always under kNone): a rewrite
  // in place since is not.
  bool unchanged(const FileHandle& file) const;

 private:
  // Deletes least recently used files until `bytes` more (a shard's and its
  // sidecar's) fit, then opens (creating it if absent) the part file `part`;
  // returns its descriptor, or -1 with errno set; or, for Need::kAhead, -1 with errno
  // ENOSPC when only deleting pinned shards would make room.
  int reserve(std::uint64_t bytes, const std::string& part, Need need) const;
  // ensure() and open(): with `opened`, the complete file is opened where it is
  // known to be the checked one (its own descriptor's stat is the one checked, or
  // under the directory's lock right after its rename) and handed over there.
  std::string locate(const shards::ShardEntry& shard, Need need,
                     FileHandle* opened) const;
  // After `done` (taking `bytes` with its sidecar) was renamed complete: deletes
  // least recently used files until the complete shards and dead parts fit in
  // the limit (see above).
  // False when `done`, downloaded ahead, was deleted itself.
  // REQUIRES: the directory's lock is held; limit_ != 0.
  bool trim(const std::string& done, std::uint64_t bytes, Need need) const;
  // Whether the complete file at `path`, whose stat is `st`, may be served under
  // verify_; when not, it was deleted (changed since its download) or replaced
  // meanwhile, and the caller looks again.
  bool trusted(const std::string& path, const struct stat& st,
               const shards::ShardEntry& shard) const;
  void remember(const std::string& path, const Identity& id) const;
  // Whether `path` was last checked with identity `id` (always under kNone).
  bool checked(const std::string& path, const Identity& id) const;
  // DIR/<url hash>/NAME.<xxh64>.
  std::string complete_path(const shards::ShardEntry& shard) const;
  // DIR/<url hash>/NAME.<xxh64>.<bytes>.part.
  std::string part_path(const shards::ShardEntry& shard) const;

  ObjectUrl base_;
  std::string dir_;     // the cache directory the limit applies to
  std::string folder_;  // dir_/<hash of the data set's URL>
  std::uint64_t limit_;
  Verify verify_;
  const ObjectReader& reader_;
  // Complete files this ShardCache has checked, by path, with the identity they
  // had then: a file whose stat still matches is not checked again.
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, Identity> checked_;
};

// The cache directory when none is given: $SEEDLOADER_CACHE_DIR, else
// $XDG_CACHE_HOME/seedloader, else ~/.cache/seedloader.
std::string default_cache_dir();

}  // namespace seedloader::remote
