// TarShards: WebDataset-style tar shards. Members whose names share a key (the
// name up to the first dot of its last component, e.g. "a/000123" for
// "a/000123.jpg" and "a/000123.cls") form one sample; a sample's members must be
// consecutive in its shard. Each shard is read once at construction with
// libarchive to build the index — shard, data offset and size of the image and
// the label member of every sample, in flat arrays — so get() is random access:
// one pread at the member's offset.
// Member names are untrusted: a name with a ".." component, an absolute name, a
// symbolic or hard link, a device or other non-regular member, or a sparse file
// makes construction fail with DataError naming the shard and member. Members
// with other extensions are ignored; a sample without an image or a label, a
// duplicate extension or a key split across the shard is a DataError.
// Shards must be plain (uncompressed) tar: random access needs real offsets.
// A folder written by seedloader-pack (its directory, or its index.json, as the
// pattern) is sized from index.json without opening a shard; each process then
// reads a shard's headers when it first needs one of its samples, after checking
// the shard's size and XXH64 against the index, and its sample count after. A
// shard that disagrees is a DataError naming the shard and the index. A directory
// without an index.json is a DataError that says how to name its shards.
// A URL (s3://bucket/prefix/, https://host/path/ or http://…, each naming a
// packed folder or its index.json) is read the same way, through a shard cache
// on local disk: each shard is downloaded whole into cache_dir (shared safely by
// every worker, rank and loader on a node; see remote/shard_cache.h), checked
// against the index, and read from there. S3's region and endpoint come from the
// AWS variables, its credentials from where the AWS CLI finds them
// (remote/s3_config.h, remote/aws_credentials.h). A URL without an
// index.json is a DataError that names seedloader-pack.
// Fields: "image" [C, H, W] from the transform chain (which must fix the size),
// "label" int64 (the label member's text, a decimal integer).
// Built from two parts (loader/datasets/): a ShardIndex, where each sample's
// members lie, and a ShardSource, where a shard's bytes come from (local files,
// or the shard cache for a URL); get() finds the member in the one and reads it
// from the other, through the shard's descriptor that the source keeps open
// (for a URL: in a worker; the process that built it looks each read's shard up
// in the cache).
// Owns both and the transform chain (in a State defined in tar_shards.cc). The
// chain and the index's shard list are fixed at construction; what changes, per
// process and under mutexes, is the lazily read shard headers of an indexed
// folder, the shards the source keeps open and, for a URL, the pins and
// downloads ahead that will_read() asks for. get() is safe across threads and
// processes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/datasets/image_options.h"
#include "seedloader/transforms/compose.h"

namespace seedloader {

// How a URL's shard found in the cache is checked, when a data set first opens
// it (in a process, or in the parent its worker was forked from) and whenever
// another process has replaced it since (remote/shard_cache.h):
enum class CacheVerify {
  // Its inode, size and modification time against those recorded at download
  // (a stat and a small read): catches a rewrite or replacement, not a change
  // that restored the modification time, nor damage below the file system.
  kStat,
  // Its XXH64 in full (one sequential read of the shard): catches any change.
  kHash,
  // Trusted: a changed shard is served as it is.
  kNone,
};

// "stat", "hash" or "none"; nothing for another word.
std::optional<CacheVerify> parse_cache_verify(std::string_view name);

struct TarShardsOptions {
  std::string label_ext = "cls";  // the image is the member with an image extension
  // With an index.json: check each shard's XXH64 against the index when this
  // process first opens it (one sequential read of the shard). For a local
  // folder; a URL's shards are checked at download, then as cache_verify says.
  bool verify_shards = true;
  std::uint64_t max_pixels = kDefaultMaxPixels;
  int channels = 3;
  // For a URL: the shard cache's directory (empty: $SEEDLOADER_CACHE_DIR, else
  // $XDG_CACHE_HOME/seedloader, else ~/.cache/seedloader) and its bound in bytes,
  // each shard's sidecar included (0: none; else at least the largest shard plus
  // 84 bytes, the most its sidecar takes).
  std::string cache_dir;
  std::uint64_t cache_limit = 0;
  // For a URL: how a cached shard is checked (a shard that fails is downloaded
  // again).
  CacheVerify cache_verify = CacheVerify::kStat;
  // For a URL: attempts per shard that make no progress (timeouts, resets, 5xx,
  // 429) before it fails; a transfer moving fewer than min_rate_bytes_s bytes a
  // second over stall_timeout_s seconds is cut off (and counts as such an
  // attempt); deadline_s bounds one object's whole read, retries included (0:
  // no bound but the attempts'); index.json may be at most max_index_bytes, and
  // its read, which the constructor waits for, takes at most index_deadline_s
  // (retries included; 0: no bound but deadline_s and the attempts'), so that a
  // server trickling it fails the construction in a minute, not after every
  // attempt's stall.
  int max_attempts = 6;
  double stall_timeout_s = 30;
  double min_rate_bytes_s = 1024;
  double deadline_s = 0;
  std::uint64_t max_index_bytes = std::uint64_t{256} << 20;
  double index_deadline_s = 60;
  // For an s3:// URL: requests unsigned (a public bucket), whatever credentials
  // could be found; without it, no credentials is an error (AWS_NO_SIGN_REQUEST=true
  // does the same).
  bool anonymous = false;
  // For a URL: shards each worker process downloads ahead of its reads, at once,
  // in the order of the batches it has been given (0: none; each read then waits
  // for its own shard's download).
  int prefetch_shards = 4;
};

// Expands a shard pattern: one brace range "{000..009}" (zero padding kept) and
// then glob characters (*, ?, [..]); the result is sorted within each step.
// Throws ConfigError for a malformed range, DataError when nothing matches.
std::vector<std::string> expand_shard_pattern(const std::string& pattern);

// Downloads ahead of the reads (prefetch_shards) that failed, counted in every
// process of the data set (its workers included), and the first one's message.
// A read that then fails says so too.
struct PrefetchErrors {
  std::uint64_t count = 0;
  std::string first;
};

class TarShards final : public Dataset {
 public:
  TarShards(const std::string& pattern, Compose transform, TarShardsOptions options = {});
  ~TarShards() override;
  TarShards(const TarShards&) = delete;
  TarShards& operator=(const TarShards&) = delete;

  std::uint64_t size() const override;
  const SampleLayout& layout() const override;
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;
  // Samples per shard, in shard order (from index.json, or counted at construction).
  std::vector<std::uint64_t> shard_sizes() const override;
  // For a URL, in a worker process: pins the cached shards of these samples,
  // so that the cache evicts other shards first, until the next call; and
  // downloads the first prefetch_shards of the others in background threads of
  // that process (never evicting a pinned shard for them).
  void will_read(std::span<const std::uint64_t> indices) const noexcept override;
  // For a URL with prefetch_shards > 0: the samples of 2 x prefetch_shards of
  // its largest shards, so that a worker sees the shards of the batches after
  // its own before it needs them.
  std::uint64_t read_ahead() const override;

  // For a URL: what its downloads ahead have met so far (none for local shards).
  PrefetchErrors prefetch_errors() const;

  // The sample's key (e.g. "000123"), for messages and tests.
  // REQUIRES: index < size().
  std::string_view key(std::uint64_t index) const;

 private:
  struct State;
  std::unique_ptr<const State> state_;
};

}  // namespace seedloader
