// ShardIndex: where every sample of a set of tar shards lies, in one
// representation whether the shards were named by a pattern (each scanned when
// the index is built) or listed by an index.json (sized from it without opening
// a shard; each scanned, and checked against its entry, when a process first
// needs one of its samples). Sample i of the data set is sample i - first(s) of
// shard s = shard_of(i). Knows nothing of where a shard's bytes come from: the
// caller hands samples() the shard's file (ShardSource).
// Thread-safe: lazy scans happen under a mutex (a forked child keeps what its
// parent had scanned); everything else is fixed at construction.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_io.h"
#include "loader/datasets/tar_scan.h"
#include "shards/index_format.h"

namespace seedloader {

// One shard's samples, in order: keys in one string, member spans in flat arrays.
class ShardSamples {
 public:
  std::size_t size() const { return images_.size(); }
  // REQUIRES: i < size() for all of these.
  std::string_view key(std::size_t i) const;
  const MemberSpan& image(std::size_t i) const { return images_[i]; }
  const MemberSpan& label(std::size_t i) const { return labels_[i]; }
  // Size 0 when the sample has no restart index.
  MemberSpan restart(std::size_t i) const {
    return i < restarts_.size() ? restarts_[i] : MemberSpan{};
  }

  void add(const ScannedSample& sample);
  void shrink_to_fit();

 private:
  std::string keys_;
  std::vector<std::uint64_t> key_ends_;
  std::vector<MemberSpan> images_;
  std::vector<MemberSpan> labels_;
  std::vector<MemberSpan> restarts_;  // empty until a sample has one
};

class ShardIndex {
 public:
  // The shards at `paths`, each scanned now (entry: the path, the file's size,
  // the samples found, xxh64 0). Throws DataError when one cannot be read or
  // breaks the rules of scan_tar_shard, or when they hold no sample.
  ShardIndex(const std::vector<std::string>& paths, std::string label_ext);
  // The shards an index.json at `where` lists (shards::parse_index), scanned on
  // first use; with check_hash, each one's XXH64 is checked then as well (one
  // sequential read of the shard).
  ShardIndex(std::vector<shards::ShardEntry> entries, std::string where,
             std::string label_ext, bool check_hash);
  ShardIndex(const ShardIndex&) = delete;
  ShardIndex& operator=(const ShardIndex&) = delete;

  std::uint64_t size() const { return first_.back(); }
  std::size_t shard_count() const { return entries_.size(); }
  const std::vector<shards::ShardEntry>& entries() const { return entries_; }
  // REQUIRES: index < size().
  std::size_t shard_of(std::uint64_t index) const;
  // REQUIRES: shard < shard_count().
  std::uint64_t first(std::size_t shard) const { return first_[shard]; }
  // Samples per shard, in shard order.
  std::vector<std::uint64_t> shard_sizes() const;
  // The largest shard's samples.
  std::uint64_t largest_shard() const;

  // Shard `shard`'s samples, scanned from `file` (its bytes; `location` names it)
  // the first time this process asks. A shard whose size, sample count or (with
  // check_hash) XXH64 differs from its entry is a DataError naming the shard and
  // the index. REQUIRES: shard < shard_count().
  const ShardSamples& samples(std::size_t shard, const FileHandle& file,
                              const std::string& location) const;

 private:
  std::vector<shards::ShardEntry> entries_;
  std::vector<std::uint64_t>
      first_;          // first_[s]: the data set's index of shard s's first sample
  std::string where_;  // the index.json's path or URL; empty for a pattern
  std::string label_ext_;
  bool check_hash_ = false;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<const ShardSamples>> scanned_;
};

}  // namespace seedloader
