// ShardSource: where a tar shard's bytes are read from, behind one interface —
// LocalShards (files on this machine) or CachedShards (a remote data set's
// shards, through the node's shard cache, remote/shard_cache.h) — so that
// reading a sample is "find the member (ShardIndex), read it from the source".
// A source keeps the shards a process is reading open (LocalShards always,
// CachedShards in a process that announces its reads: a worker): reading a
// sample costs its preads, not an open, a stat and a close. Everything reads
// with pread, so descriptors a forked child inherits (the same open file
// descriptions) are shared safely.
// Thread-safe; a forked child may use the object it inherited, unless the fork
// happened while another thread was inside one of its calls (it would inherit
// that call's mutex held, as with any lock).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/file_io.h"
#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "remote/shard_cache.h"
#include "remote/shard_prefetcher.h"
#include "seedloader/datasets/tar_shards.h"
#include "shards/index_format.h"

namespace seedloader {

class ShardSource {
 public:
  virtual ~ShardSource() = default;
  // Shard `shard` open for reading. Throws DataError naming it when it cannot be
  // opened (or, for a remote one, fetched).
  virtual std::shared_ptr<const FileHandle> open(std::size_t shard) const = 0;
  // The shard's path or URL, for messages.
  virtual const std::string& location(std::size_t shard) const = 0;
  // The shards this process reads next, in the order it reads them; called again
  // as reads go on (a worker, for each batch it is given).
  virtual void will_read(const std::vector<std::size_t>& shards) const noexcept {}
  virtual PrefetchErrors prefetch_errors() const { return {}; }
  // Shards each process downloads ahead of its reads (0: none).
  virtual int prefetch_shards() const { return 0; }
};

// Shards on this machine at `paths`. Keeps the last kKept shards it opened open.
class LocalShards final : public ShardSource {
 public:
  static constexpr std::size_t kKept = 8;
  explicit LocalShards(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  std::shared_ptr<const FileHandle> open(std::size_t shard) const override;
  const std::string& location(std::size_t shard) const override { return paths_[shard]; }

 private:
  std::vector<std::string> paths_;
  mutable std::mutex mutex_;
  // Most recently used first.
  mutable std::vector<std::pair<std::size_t, std::shared_ptr<const FileHandle>>> kept_;
};

// What CachedShards needs beyond the shards: the cache and how downloads go.
struct CachedShardsOptions {
  std::string cache_dir;
  std::uint64_t cache_limit = 0;
  remote::ShardCache::Verify verify = remote::ShardCache::Verify::kStat;
  int prefetch_shards = 4;
};

// A remote data set's shards (siblings of `index_url`, as `entries` lists them),
// each read from its complete, checked copy in the shard cache. In a process
// forked after construction (a worker), will_read() pins the cached shards of the
// reads announced (so that no eviction takes them first, and their open
// descriptors serve the reads; a kept pin is checked with one fstat per call)
// and downloads the first prefetch_shards missing ones in background threads;
// the process that built the source (which may fork again), and any process
// that reads without announcing, pins nothing and looks each read's shard up in
// the cache (checking it as cache_verify says) again.
class CachedShards final : public ShardSource {
 public:
  // `entries` must outlive the source. Throws ConfigError for a bad cache
  // directory.
  CachedShards(remote::ObjectUrl index_url,
               const std::vector<shards::ShardEntry>& entries,
               std::unique_ptr<remote::ObjectReader> reader, CachedShardsOptions options);
  ~CachedShards() override;
  CachedShards(const CachedShards&) = delete;
  CachedShards& operator=(const CachedShards&) = delete;

  std::shared_ptr<const FileHandle> open(std::size_t shard) const override;
  const std::string& location(std::size_t shard) const override {
    return locations_[shard];
  }
  void will_read(const std::vector<std::size_t>& shards) const noexcept override;
  PrefetchErrors prefetch_errors() const override;
  int prefetch_shards() const override { return prefetch_shards_; }

 private:
  struct SharedErrors;  // in memory shared with forked workers
  using Held = std::pair<std::size_t, std::shared_ptr<const FileHandle>>;
  // Counts a failure to fetch ahead; keeps the first message, "BEFORE LOCATION
  // AFTER message" (the shard's location).
  void failed(const char* before, std::size_t shard, const char* after,
              const char* message) const noexcept;

  const std::vector<shards::ShardEntry>& entries_;
  std::vector<std::string> locations_;  // each shard's URL, display form
  std::unique_ptr<remote::ObjectReader> reader_;
  std::unique_ptr<remote::ShardCache> cache_;
  int prefetch_shards_;
  SharedErrors* errors_;  // a MAP_SHARED page, mapped before any fork
  pid_t creator_;
  mutable pid_t announcing_ = -1;  // the process will_read() was last called in
  mutable std::mutex mutex_;
  // The pinned shards of the reads will_read() announced last, and shards a read
  // fetched itself, pinned too; only in the process that announces (announcing_).
  mutable std::vector<Held> held_;
  // Declared last: destroyed first, so its threads stop before the rest goes.
  mutable std::unique_ptr<remote::ShardPrefetcher> prefetcher_;
};

}  // namespace seedloader
