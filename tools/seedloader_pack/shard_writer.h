// ShardWriter: one WebDataset shard as a plain POSIX ustar file — for each member a
// 512-byte header and its data padded to 512 bytes, then two zero blocks — written
// through an OutputFile (temporary name, fsync, rename). Every header carries mode
// 0644, owner 0 and mtime 0, so the same samples always give the same bytes and
// the same checksum. Regular-file members only; no extended headers, so a member
// is at most 8 GiB - 1 and its name at most 100 bytes (refused otherwise, naming
// the member). Owns its OutputFile; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "shards/index_format.h"
#include "tools/seedloader_pack/output_file.h"

namespace seedloader::pack {

// Bytes a member holding `size` bytes takes in a shard: header and padded data.
constexpr std::uint64_t tar_member_bytes(std::uint64_t size) {
  return 512 + (size + 511) / 512 * 512;
}
// The two zero blocks that end every shard.
inline constexpr std::uint64_t kTarEndBytes = 1024;

class ShardWriter {
 public:
  ShardWriter(const std::string& dir, std::string name);

  // Appends a member. Throws Error naming it when the name or size does not fit
  // a ustar header.
  void add_member(const std::string& name, std::span<const std::uint8_t> data);
  // Counts one sample, once its members are in.
  void end_sample() { ++samples_; }
  std::uint64_t samples() const { return samples_; }
  // Bytes the shard will have if finished now.
  std::uint64_t size() const { return file_.size() + kTarEndBytes; }
  // Ends the archive, commits the file and says what it holds.
  // REQUIRES: called once.
  shards::ShardEntry finish();

 private:
  std::string name_;
  OutputFile file_;
  std::uint64_t samples_ = 0;
};

}  // namespace seedloader::pack
