#include "seedloader/datasets/tar_shards.h"

#include <glob.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "base/file_io.h"
#include "loader/datasets/image_decode.h"
#include "loader/datasets/image_output.h"
#include "loader/datasets/shard_index.h"
#include "loader/datasets/shard_source.h"
#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "seedloader/error.h"
#include "shards/index_format.h"

namespace seedloader {
namespace {

bool has_glob_chars(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> expand_braces(const std::string& pattern) {
  const std::size_t open = pattern.find('{');
  if (open == std::string::npos) return {pattern};
  const std::size_t close = pattern.find('}', open);
  const std::size_t dots = pattern.find("..", open);
  if (close == std::string::npos || dots == std::string::npos || dots > close) {
    throw ConfigError("shard pattern " + pattern + ": expected {FIRST..LAST}");
  }
  const std::string first = pattern.substr(open + 1, dots - open - 1);
  const std::string last = pattern.substr(dots + 2, close - dots - 2);
  unsigned long lo = 0, hi = 0;
  auto parse = [&](const std::string& s, unsigned long& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
      throw ConfigError("shard pattern " + pattern + ": bad range bound '" + s + "'");
    }
  };
  parse(first, lo);
  parse(last, hi);
  if (lo > hi || hi - lo > 10'000'000) {
    throw ConfigError("shard pattern " + pattern + ": bad range");
  }
  std::vector<std::string> out;
  for (unsigned long i = lo; i <= hi; ++i) {
    std::string num = std::to_string(i);
    if (num.size() < first.size()) num.insert(0, first.size() - num.size(), '0');
    out.push_back(pattern.substr(0, open) + num + pattern.substr(close + 1));
  }
  return out;
}

std::int64_t parse_label(const std::vector<std::uint8_t>& text) {
  std::size_t b = 0, e = text.size();
  while (b < e && std::isspace(text[b])) ++b;
  while (e > b && std::isspace(text[e - 1])) --e;
  std::int64_t v = 0;
  const char* first = reinterpret_cast<const char*>(text.data()) + b;
  const char* last = reinterpret_cast<const char*>(text.data()) + e;
  auto [end, ec] = std::from_chars(first, last, v);
  if (b == e || ec != std::errc() || end != last) {
    throw DataError("label member is not a decimal integer");
  }
  return v;
}

}  // namespace

std::vector<std::string> expand_shard_pattern(const std::string& pattern) {
  std::vector<std::string> out;
  for (const std::string& p : expand_braces(pattern)) {
    if (!has_glob_chars(p)) {
      out.push_back(p);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(p.c_str(), 0, nullptr, &g);  // glob sorts its result
    std::unique_ptr<glob_t, void (*)(glob_t*)> guard(&g, &::globfree);
    if (rc == GLOB_NOMATCH) continue;
    if (rc != 0) throw DataError("shard pattern " + p + ": glob failed");
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  if (out.empty()) throw DataError("shard pattern " + pattern + " matches no file");
  return out;
}

std::optional<CacheVerify> parse_cache_verify(std::string_view name) {
  if (name == "stat") return CacheVerify::kStat;
  if (name == "hash") return CacheVerify::kHash;
  if (name == "none") return CacheVerify::kNone;
  return std::nullopt;
}

struct TarShards::State {
  State(const std::string& pattern, Compose transform, TarShardsOptions options)
      : pattern(pattern),
        options(std::move(options)),
        output(std::move(transform), this->options.channels, {0, 0},
               "TarShards(" + pattern + ")"),
        layout({output.field("image"), FieldSpec{"label", DType::kI64, {}, false}}) {}

  // A packed folder on this machine: its index.json at `path`.
  void open_index(const std::string& path);
  // A packed folder at a URL: the index from the server, the shards through the
  // cache.
  void open_remote(remote::ObjectUrl url);

  std::string pattern;  // as given; a URL in its display form
  TarShardsOptions options;
  ImageOutput output;
  SampleLayout layout;
  std::unique_ptr<const ShardIndex> index;
  // Declared after the index, whose entries a CachedShards reads: destroyed first.
  std::unique_ptr<const ShardSource> source;
};

// The index.json of a packed folder: `pattern` itself, or in the directory it names.
std::string index_file(const std::string& pattern) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::path(pattern).filename() == "index.json" && fs::is_regular_file(pattern, ec))
    return pattern;
  if (fs::is_directory(pattern, ec)) {
    const fs::path index = fs::path(pattern) / "index.json";
    if (fs::exists(index, ec)) return index.string();
    throw DataError("TarShards(" + pattern + "): the directory has no index.json; " +
                    "pack it with seedloader-pack, or name its shards with a pattern " +
                    "such as " + (fs::path(pattern) / "*.tar").string());
  }
  return {};
}

void TarShards::State::open_index(const std::string& path) {
  std::vector<std::uint8_t> text;
  {
    const FileHandle file(path);
    if (file.size() > options.max_index_bytes)
      throw DataError("TarShards: index " + path + " has " + std::to_string(file.size()) +
                      " bytes, more than the limit of " +
                      std::to_string(options.max_index_bytes) + " (max_index_bytes)");
    file.read_at(0, file.size(), text);
  }
  auto listed = std::make_unique<const ShardIndex>(
      shards::parse_index(text, path), path, options.label_ext, options.verify_shards);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<std::string> paths;
  for (const shards::ShardEntry& entry : listed->entries())
    paths.push_back((dir / entry.name).string());
  index = std::move(listed);
  source = std::make_unique<const LocalShards>(std::move(paths));
}

void TarShards::State::open_remote(remote::ObjectUrl url) {
  // The folder's URL, with or without its trailing '/', or its index.json.
  // (An s3:// URL's key may be empty: the bucket's top.)
  const std::size_t slash = url.path.rfind('/');
  const std::string last = url.path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (last != shards::kIndexName) {
    if (!url.path.empty() && url.path.back() != '/') url.path += '/';
    url = url.sibling(std::string(shards::kIndexName));
  }
  const std::string where = url.display();
  if (options.max_attempts < 1 || !(options.stall_timeout_s > 0) ||
      !(options.min_rate_bytes_s >= 1) || !(options.deadline_s >= 0) ||
      !(options.index_deadline_s >= 0)) {
    throw ConfigError("TarShards(" + pattern +
                      "): max_attempts must be >= 1, stall_timeout_s > 0, "
                      "min_rate_bytes_s >= 1, deadline_s >= 0 and "
                      "index_deadline_s >= 0; got " +
                      std::to_string(options.max_attempts) + ", " +
                      std::to_string(options.stall_timeout_s) + ", " +
                      std::to_string(options.min_rate_bytes_s) + ", " +
                      std::to_string(options.deadline_s) + " and " +
                      std::to_string(options.index_deadline_s));
  }
  if (options.prefetch_shards < 0) {
    throw ConfigError("TarShards(" + pattern + "): prefetch_shards must be >= 0, got " +
                      std::to_string(options.prefetch_shards));
  }
  auto reader = std::make_unique<remote::ObjectReader>(
      remote::FetchOptions{.max_attempts = options.max_attempts,
                           .stall_timeout_s = options.stall_timeout_s,
                           .min_rate_bytes_s = options.min_rate_bytes_s,
                           .deadline_s = options.deadline_s,
                           .anonymous = options.anonymous});
  std::vector<std::uint8_t> text;
  if (!reader->read_if_present(url, text, options.max_index_bytes,
                               {options.index_deadline_s, "index_deadline_s"})) {
    throw DataError("TarShards(" + pattern + "): no index at " + where +
                    "; a remote data set is read through the index.json that " +
                    "seedloader-pack writes: run seedloader-pack SPEC OUT/ and upload " +
                    "OUT/ whole");
  }
  // The cache checks a remote shard's hash before anyone sees the file, and its
  // copy as cache_verify says: the index does not hash it again.
  index = std::make_unique<const ShardIndex>(shards::parse_index(text, where), where,
                                             options.label_ext, false);
  std::uint64_t largest = 0;
  for (const shards::ShardEntry& shard : index->entries())
    largest = std::max(largest, shard.bytes);
  // The cache counts each shard with its sidecar (remote/shard_cache.h).
  const std::uint64_t needed = largest + remote::ShardCache::kSidecarBytes;
  if (options.cache_limit != 0 && options.cache_limit < needed) {
    throw ConfigError("TarShards(" + pattern + "): cache_limit " +
                      std::to_string(options.cache_limit) +
                      " is smaller than its largest shard with its sidecar (" +
                      std::to_string(largest) + " + " +
                      std::to_string(remote::ShardCache::kSidecarBytes) + " bytes)");
  }
  source = std::make_unique<const CachedShards>(
      std::move(url), index->entries(), std::move(reader),
      CachedShardsOptions{.cache_dir = options.cache_dir,
                          .cache_limit = options.cache_limit,
                          .verify = options.cache_verify == CacheVerify::kHash
                                        ? remote::ShardCache::Verify::kHash
                                    : options.cache_verify == CacheVerify::kNone
                                        ? remote::ShardCache::Verify::kNone
                                        : remote::ShardCache::Verify::kStat,
                          .prefetch_shards = options.prefetch_shards});
}

TarShards::TarShards(const std::string& pattern, Compose transform,
                     TarShardsOptions options) {
  // A URL is known by its display form everywhere (describe(), every message):
  // a password it carries is never shown.
  std::optional<remote::ObjectUrl> url = remote::ObjectUrl::parse(pattern);
  auto s = std::make_unique<State>(url ? url->display() : pattern, std::move(transform),
                                   std::move(options));
  if (url) {
    s->open_remote(std::move(*url));
  } else if (const std::string index = index_file(pattern); !index.empty()) {
    s->open_index(index);
  } else {
    std::vector<std::string> paths = expand_shard_pattern(pattern);
    try {
      s->index = std::make_unique<const ShardIndex>(paths, s->options.label_ext);
    } catch (const DataError& e) {
      throw DataError("TarShards(" + pattern + "): " + e.what());
    }
    s->source = std::make_unique<const LocalShards>(std::move(paths));
  }
  state_ = std::move(s);
}

TarShards::~TarShards() = default;

std::uint64_t TarShards::size() const { return state_->index->size(); }

const SampleLayout& TarShards::layout() const { return state_->layout; }

std::string TarShards::describe() const { return "TarShards(" + state_->pattern + ")"; }

std::vector<std::uint64_t> TarShards::shard_sizes() const {
  return state_->index->shard_sizes();
}

void TarShards::will_read(std::span<const std::uint64_t> indices) const noexcept {
  const State& s = *state_;
  std::vector<std::size_t> shards;
  try {
    // The distinct shards the reads need, in the order the reads need them.
    for (const std::uint64_t index : indices) {
      if (index >= s.index->size()) continue;
      const std::size_t shard = s.index->shard_of(index);
      if (std::find(shards.begin(), shards.end(), shard) == shards.end())
        shards.push_back(shard);
    }
  } catch (const std::bad_alloc&) {
    return;  // the reads open their own shards
  }
  s.source->will_read(shards);
}

std::uint64_t TarShards::read_ahead() const {
  const State& s = *state_;
  const int ahead = s.source->prefetch_shards();
  if (ahead <= 0) return 0;
  return std::min<std::uint64_t>(
      2 * static_cast<std::uint64_t>(ahead) * s.index->largest_shard(), kMaxReadAhead);
}

PrefetchErrors TarShards::prefetch_errors() const {
  return state_->source->prefetch_errors();
}

std::string_view TarShards::key(std::uint64_t index) const {
  const State& s = *state_;
  const std::size_t shard = s.index->shard_of(index);
  const auto file = s.source->open(shard);
  return s.index->samples(shard, *file, s.source->location(shard))
      .key(index - s.index->first(shard));
}

void TarShards::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const State& s = *state_;
  if (index >= size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  thread_local std::vector<std::uint8_t> bytes, restart_bytes;
  const std::size_t shard = s.index->shard_of(index);
  std::string_view key;
  try {
    // Find the member, read it from the source.
    const std::shared_ptr<const FileHandle> file = s.source->open(shard);
    const ShardSamples& samples =
        s.index->samples(shard, *file, s.source->location(shard));
    const std::size_t at = index - s.index->first(shard);
    key = samples.key(at);
    const MemberSpan label = samples.label(at), image = samples.image(at);
    const MemberSpan restart = samples.restart(at);
    file->read_at(label.offset, label.size, bytes);
    const std::int64_t value = parse_label(bytes);
    file->read_at(image.offset, image.size, bytes);
    restart_bytes.clear();
    if (restart.size > 0) file->read_at(restart.offset, restart.size, restart_bytes);
    const EncodedImage source(bytes, s.options.max_pixels, s.options.channels,
                              restart_bytes);
    s.output.write(source, rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = value;
  } catch (...) {
    // A download ahead that failed before may say more than this read's error.
    const PrefetchErrors ahead = s.source->prefetch_errors();
    rethrow_as_data_error(
        describe() + ": sample " + std::to_string(index) + " (shard " +
        s.source->location(shard) +
        (key.empty() ? std::string() : ", member '" + std::string(key) + "'") + ")" +
        (ahead.count == 0
             ? std::string()
             : " [" + std::to_string(ahead.count) +
                   " download(s) ahead failed before; the first: " + ahead.first + "]"));
  }
}

}  // namespace seedloader
