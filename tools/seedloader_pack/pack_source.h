// PackSource: what seedloader-pack reads — a data set named by a data spec, seen
// as samples of encoded members ("jpg" and its bytes, "cls" and the label's
// decimal text) instead of decoded tensors:
//   imagefolder:DIR  each file's own bytes, its extension lower-cased, and "cls";
//   tar:PATTERN      each sample's image member's bytes and extension, and "cls";
//   cifar10:DIR, mnist:DIR, synthetic:N
//                    the raw pixels as a lossless PNG (RGB or grey), and "cls".
// Samples are numbered as the data set numbers them. Reading is single-threaded;
// a source is not shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace seedloader::pack {

// One member of a packed sample: KEY.ext holds `bytes`.
struct Member {
  std::string ext;
  std::vector<std::uint8_t> bytes;
};

class PackSource {
 public:
  virtual ~PackSource() = default;
  virtual std::uint64_t size() const = 0;
  // Sample `index`'s members, image first. Throws DataError naming the file (or
  // shard and member) and the sample.
  // REQUIRES: index < size().
  virtual void read(std::uint64_t index, std::vector<Member>& members) const = 0;
  virtual std::string describe() const = 0;
};

// Opens the data set `spec` names (tools/common/data_spec.h). Throws ConfigError
// for a bad spec and DataError for unreadable data.
std::unique_ptr<PackSource> open_pack_source(const std::string& spec);

// The tar:PATTERN source (tar_source.cc).
std::unique_ptr<PackSource> open_tar_source(const std::string& pattern);

}  // namespace seedloader::pack
