#include "loader/datasets/shard_index.h"

#include <algorithm>
#include <utility>

#include "seedloader/error.h"

namespace seedloader {

std::string_view ShardSamples::key(std::size_t i) const {
  const std::uint64_t begin = i == 0 ? 0 : key_ends_[i - 1];
  return std::string_view(keys_).substr(begin, key_ends_[i] - begin);
}

void ShardSamples::add(const ScannedSample& sample) {
  keys_ += sample.key;
  key_ends_.push_back(keys_.size());
  images_.push_back(sample.image);
  labels_.push_back(sample.label);
  if (sample.restart.size > 0 || !restarts_.empty()) {
    restarts_.resize(images_.size() - 1);
    restarts_.push_back(sample.restart);
  }
}

void ShardSamples::shrink_to_fit() {
  keys_.shrink_to_fit();
  key_ends_.shrink_to_fit();
  images_.shrink_to_fit();
  labels_.shrink_to_fit();
  restarts_.shrink_to_fit();
}

ShardIndex::ShardIndex(const std::vector<std::string>& paths, std::string label_ext)
    : label_ext_(std::move(label_ext)) {
  first_.push_back(0);
  for (const std::string& path : paths) {
    // Opened (and checked to be a regular file) here, not by libarchive: a FIFO
    // named like a shard must fail, not wait for a writer.
    const FileHandle file(path);
    auto samples = std::make_unique<ShardSamples>();
    scan_tar_shard(file, label_ext_,
                   [&](const ScannedSample& sample) { samples->add(sample); });
    samples->shrink_to_fit();
    entries_.push_back({path, file.size(), samples->size(), 0});
    first_.push_back(first_.back() + samples->size());
    scanned_.push_back(std::move(samples));
  }
  if (size() == 0) throw DataError("the shards hold no samples");
}

ShardIndex::ShardIndex(std::vector<shards::ShardEntry> entries, std::string where,
                       std::string label_ext, bool check_hash)
    : entries_(std::move(entries)),
      where_(std::move(where)),
      label_ext_(std::move(label_ext)),
      check_hash_(check_hash) {
  first_.push_back(0);
  for (const shards::ShardEntry& entry : entries_)
    first_.push_back(first_.back() + entry.samples);
  scanned_.resize(entries_.size());
}

std::size_t ShardIndex::shard_of(std::uint64_t index) const {
  return static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), index) -
                                  first_.begin() - 1);
}

std::vector<std::uint64_t> ShardIndex::shard_sizes() const {
  std::vector<std::uint64_t> sizes;
  for (const shards::ShardEntry& entry : entries_) sizes.push_back(entry.samples);
  return sizes;
}

std::uint64_t ShardIndex::largest_shard() const {
  std::uint64_t largest = 0;
  for (const shards::ShardEntry& entry : entries_)
    largest = std::max(largest, entry.samples);
  return largest;
}

const ShardSamples& ShardIndex::samples(std::size_t shard, const FileHandle& file,
                                        const std::string& location) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (scanned_[shard]) return *scanned_[shard];
  const shards::ShardEntry& want = entries_[shard];
  const auto fail = [&](const std::string& why) -> DataError {
    return DataError("shard " + location + " disagrees with its index " + where_ + ": " +
                     why);
  };
  if (file.size() != want.bytes)
    throw fail("it has " + std::to_string(file.size()) + " bytes, the index says " +
               std::to_string(want.bytes));
  if (check_hash_ &&
      shards::file_xxh64(file.fd(), want.bytes, "shard " + location) != want.xxh64)
    throw fail("its XXH64 differs from the index's (the file changed or is damaged)");
  auto samples = std::make_unique<ShardSamples>();
  scan_tar_shard(file, label_ext_,
                 [&](const ScannedSample& sample) { samples->add(sample); });
  if (samples->size() != want.samples)
    throw fail("it holds " + std::to_string(samples->size()) +
               " samples, the index says " + std::to_string(want.samples));
  samples->shrink_to_fit();
  scanned_[shard] = std::move(samples);
  return *scanned_[shard];
}

}  // namespace seedloader
