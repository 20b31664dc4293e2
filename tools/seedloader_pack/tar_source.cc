// The tar:PATTERN source. TarShards opens the shards first, so everything it
// refuses (links, "..", a sample without image or label, ...) is refused here
// with its message; a second pass over the headers then records where each
// sample's image and label members lie, and read() copies their bytes.
#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "loader/datasets/file_io.h"
#include "loader/datasets/image_decode.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
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
  bool has_image = false, has_label = false;
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
  if (std::filesystem::is_directory(index, ec)) index /= "index.json";
  if (index.filename() != "index.json" || !std::filesystem::is_regular_file(index, ec))
    return expand_shard_pattern(spec);
  std::vector<std::string> paths;
  const nlohmann::json listed = nlohmann::json::parse(std::ifstream(index));
  for (const nlohmann::json& shard : listed.at("shards"))
    paths.push_back((index.parent_path() / shard.at("name").get<std::string>()).string());
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
  // Appends the samples of shards_[shard]: consecutive members sharing a key.
  void scan(std::uint32_t shard) {
    const FileHandle& file = shards_[shard];
    std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), &archive_read_free);
    archive_read_support_format_tar(a.get());
    if (archive_read_open_fd(a.get(), file.fd(), 1 << 16) != ARCHIVE_OK) {
      throw DataError("shard " + file.path() + ": " + archive_error_string(a.get()));
    }
    TarSample current;
    bool open = false;
    const auto close_sample = [&] {
      if (open && (current.has_image || current.has_label)) {
        samples_.push_back(current);
      }
      open = false;
    };
    archive_entry* entry = nullptr;
    int rc;
    while ((rc = archive_read_next_header(a.get(), &entry)) == ARCHIVE_OK) {
      if (archive_entry_filetype(entry) != AE_IFREG) continue;
      const std::string name = archive_entry_pathname(entry);
      const std::size_t slash = name.rfind('/');
      const std::size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
      const std::string key = name.substr(0, dot);
      const std::string ext =
          dot == std::string::npos ? std::string() : name.substr(dot + 1);
      if (!open || key != current.key) {
        close_sample();
        current = TarSample{};
        current.key = key;
        open = true;
      }
      const Span span{shard, static_cast<std::uint64_t>(archive_filter_bytes(a.get(), 0)),
                      static_cast<std::uint64_t>(archive_entry_size(entry))};
      if (ext == kLabelExt) {
        current.label = span;
        current.has_label = true;
      } else if (is_image_extension(ext)) {
        current.image = span;
        current.image_ext = lower(ext);
        current.has_image = true;
      }
    }
    if (rc != ARCHIVE_EOF) {
      throw DataError("shard " + file.path() + ": " + archive_error_string(a.get()));
    }
    close_sample();
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
