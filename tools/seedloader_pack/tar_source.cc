// The tar:PATTERN source. TarShards opens the shards first, so everything it
// refuses (links, "..", a sample without image or label, a shard that disagrees
// with its index, ...) is refused here with its message; the shards' headers are
// then scanned as TarShards scans them (scan_tar_shard), recording where each
// sample's image and label members lie, and read() copies their bytes.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "base/file_io.h"
#include "loader/datasets/tar_scan.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "shards/index_format.h"
#include "tools/seedloader_pack/pack_source.h"

namespace seedloader::pack {
namespace {

struct Span {
  std::uint32_t shard = 0;
  std::uint64_t offset = 0, size = 0;
};

struct TarSample {
  std::string key;
  std::string image_ext;
  Span image, label;
};

constexpr const char* kLabelExt = "cls";  // TarShardsOptions' default

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A URL is refused: the members are read from local files.
void refuse_url(const std::string& spec) {
  if (spec.find("://") != std::string::npos) {
    throw ConfigError("tar:" + spec +
                      ": seedloader-pack reads local shards only; download the pack "
                      "(index.json and its NNNNNN.tar) and pack tar:DIR");
  }
}

// The shards tar:SPEC names: its pattern's, or those a packed folder's index.json
// lists (SPEC the folder or its index.json), in its order. (TarShards has
// checked the index first.)
std::vector<std::string> shard_paths(const std::string& spec) {
  std::filesystem::path index(spec);
  std::error_code ec;
  if (std::filesystem::is_directory(index, ec)) index /= shards::kIndexName;
  if (index.filename() != shards::kIndexName ||
      !std::filesystem::is_regular_file(index, ec))
    return expand_shard_pattern(spec);
  const FileHandle file(index.string());
  std::vector<std::uint8_t> text;
  file.read_at(0, file.size(), text);
  std::vector<std::string> paths;
  for (const shards::ShardEntry& shard : shards::parse_index(text, index.string()))
    paths.push_back((index.parent_path() / shard.name).string());
  return paths;
}

class TarSource final : public PackSource {
 public:
  explicit TarSource(const std::string& pattern) : pattern_(pattern) {
    refuse_url(pattern);
    // The chain is never run (members are copied); TarShards requires one that
    // fixes the output size.
    const TarShards checked(pattern, parse_transform_spec("centercrop:1"));
    for (const std::string& path : shard_paths(pattern)) {
      shards_.emplace_back(path);
      scan(static_cast<std::uint32_t>(shards_.size() - 1));
    }
    if (samples_.size() != checked.size()) {
      throw DataError(describe() + ": found " + std::to_string(samples_.size()) +
                      " samples with an image and a label, TarShards reads " +
                      std::to_string(checked.size()));
    }
    for (std::uint64_t i = 0; i < samples_.size(); ++i) {
      if (samples_[i].key != checked.key(i)) {
        throw DataError(describe() + ": sample " + std::to_string(i) + " is '" +
                        samples_[i].key + "' here but '" + std::string(checked.key(i)) +
                        "' to TarShards");
      }
    }
  }

  std::uint64_t size() const override { return samples_.size(); }
  std::string describe() const override { return "TarShards(" + pattern_ + ")"; }

  void read(std::uint64_t index, std::vector<Member>& members) const override {
    const TarSample& s = samples_[index];
    members.resize(2);
    members[0].ext = s.image_ext;
    members[1].ext = kLabelExt;
    try {
      shards_[s.image.shard].read_at(s.image.offset, s.image.size, members[0].bytes);
      shards_[s.label.shard].read_at(s.label.offset, s.label.size, members[1].bytes);
    } catch (const DataError& e) {
      throw DataError(describe() + ": sample " + std::to_string(index) + " (" + s.key +
                      "): " + e.what());
    }
  }

 private:
  // Appends the samples of shards_[shard].
  void scan(std::uint32_t shard) {
    scan_tar_shard(shards_[shard], kLabelExt, [&](const ScannedSample& sample) {
      samples_.push_back({std::string(sample.key),
                          lower(std::string(sample.image_ext)),
                          {shard, sample.image.offset, sample.image.size},
                          {shard, sample.label.offset, sample.label.size}});
    });
  }

  std::string pattern_;
  std::vector<FileHandle> shards_;
  std::vector<TarSample> samples_;
};

}  // namespace

std::unique_ptr<PackSource> open_tar_source(const std::string& pattern) {
  return std::make_unique<TarSource>(pattern);
}

}  // namespace seedloader::pack
