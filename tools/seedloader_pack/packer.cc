#include "tools/seedloader_pack/packer.h"

#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <system_error>
#include <vector>

#include "loader/datasets/jpeg_restart.h"
#include "loader/datasets/tar_scan.h"
#include "seedloader/error.h"
#include "seedloader/sampler.h"
#include "tools/seedloader_pack/index_json.h"
#include "tools/seedloader_pack/output_file.h"
#include "tools/seedloader_pack/shard_writer.h"

namespace seedloader::pack {
namespace fs = std::filesystem;

namespace {

std::string shard_name(std::uint64_t n) {
  char name[32];
  std::snprintf(name, sizeof name, "%06llu.tar", static_cast<unsigned long long>(n));
  return name;
}

// Sample keys: the source index, zero-padded to nine digits, or to as many as
// the largest index has, so keys sort as numbers do.
class KeyFormat {
 public:
  explicit KeyFormat(std::uint64_t n)
      : width_(std::max<std::size_t>(9, std::to_string(n > 0 ? n - 1 : 0).size())) {}
  std::string operator()(std::uint64_t index) const {
    std::string digits = std::to_string(index);
    return std::string(width_ - digits.size(), '0') + digits;
  }

 private:
  std::size_t width_;
};

// What this program writes in an output folder, so --force removes nothing else.
bool is_own_file(const std::string& name) {
  static const std::regex own(R"(\d{6,}\.tar|\..+\.partial)");
  return std::regex_match(name, own);
}

void remove_file(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) throw Error("cannot remove " + path.string() + ": " + ec.message());
}

// The first index.json or .tar in `out`, or "" when there is none.
std::string earlier_pack_file(const fs::path& out) {
  std::error_code ec;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(out, ec)) {
    names.push_back(e.path().filename().string());
  }
  if (ec) throw ConfigError("cannot list " + out.string() + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (name == shards::kIndexName || fs::path(name).extension() == ".tar") return name;
  }
  return "";
}

// With --jpeg-restart: the image member (the first) rewritten with restart
// markers (jpeg_restart.h), and its index added as the `rst` member; or left as
// it is, the reason counted.
void restart_image(std::vector<Member>& members, PackSummary& summary) {
  Member& image = members.front();
  if (image.ext != "jpg" && image.ext != "jpeg") {
    ++summary.kept["not a JPEG"];
    return;
  }
  std::string why;
  std::optional<RestartedJpeg> r;
  try {
    r = add_restarts(image.bytes, &why);
  } catch (const DataError&) {
    why = "corrupt";  // the loader reports it, with its sample, when it reads it
  }
  if (!r) {
    ++summary.kept[why];
    return;
  }
  ++summary.restarted;
  summary.restart_bytes_before += image.bytes.size();
  summary.restart_bytes_after += r->jpeg.size();
  image.bytes = std::move(r->jpeg);
  members.insert(members.begin() + 1,
                 Member{std::string(kRestartExt), encode_restart_index(r->index)});
}

}  // namespace

void PackOptions::validate() const {
  if (shard_bytes == 0) throw ConfigError("--shard-size must be at least 1 byte");
}

void prepare_out_dir(const std::string& out, const PackOptions& options) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    throw ConfigError("output folder " + out + " cannot be created" +
                      (ec ? ": " + ec.message() : ": it exists and is not a folder"));
  }
  std::string found = earlier_pack_file(out);
  if (found.empty()) return;
  if (!options.force) {
    throw ConfigError("output folder " + out + " already holds " + found +
                      "; pass --force to replace an earlier pack");
  }
  // index.json goes first: from here on the folder does not claim to be complete.
  if (fs::exists(fs::path(out) / shards::kIndexName)) {
    remove_file(fs::path(out) / shards::kIndexName);
    fsync_dir(out);
  }
  for (const fs::directory_entry& e : fs::directory_iterator(out)) {
    if (is_own_file(e.path().filename().string())) remove_file(e.path());
  }
  found = earlier_pack_file(out);
  if (!found.empty()) {
    throw ConfigError("output folder " + out + " holds " + found +
                      ", which is not a shard this program names; --force removes "
                      "only NNNNNN.tar and index.json");
  }
}

PackSummary pack(const PackSource& source, const std::string& out,
                 const PackOptions& options) {
  options.validate();
  const std::uint64_t n = source.size();
  std::vector<Index> order;
  if (options.shuffle_seed) {
    order = epoch_permutation(n, *options.shuffle_seed, 0);
  } else {
    order.resize(n);
    std::iota(order.begin(), order.end(), Index{0});
  }
  const KeyFormat key(n);
  std::vector<shards::ShardEntry> done;
  std::set<std::string> fields;
  std::optional<ShardWriter> shard;
  std::vector<Member> members;
  PackSummary summary;
  for (const Index index : order) {
    source.read(index, members);
    if (options.jpeg_restart && !members.empty()) restart_image(members, summary);
    std::uint64_t sample_bytes = 0;
    for (const Member& m : members) sample_bytes += tar_member_bytes(m.bytes.size());
    if (shard && shard->samples() > 0 &&
        shard->size() + sample_bytes > options.shard_bytes) {
      done.push_back(shard->finish());
      shard.reset();
    }
    if (!shard) shard.emplace(out, shard_name(done.size()));
    const std::string k = key(index);
    for (const Member& m : members) {
      shard->add_member(k + "." + m.ext, m.bytes);
      fields.insert(m.ext);
    }
    shard->end_sample();
  }
  if (shard) done.push_back(shard->finish());
  // The shards' names are durable before index.json says they are there.
  fsync_dir(out);
  write_index_json(out, done, fields);
  fsync_dir(out);
  summary.samples = n;
  summary.shards = done.size();
  for (const shards::ShardEntry& s : done) summary.bytes += s.bytes;
  return summary;
}

}  // namespace seedloader::pack
