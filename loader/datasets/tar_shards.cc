#include "seedloader/datasets/tar_shards.h"

#include <archive.h>
#include <archive_entry.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "loader/datasets/file_io.h"
#include "loader/datasets/image_decode.h"
#include "loader/datasets/image_output.h"
#include "loader/datasets/path_index.h"
#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "remote/shard_cache.h"
#include "remote/shard_prefetcher.h"
#include "seedloader/error.h"

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

// True when `name` is safe as a key: relative, no ".." component.
bool safe_member_name(const std::string& name) {
  if (name.empty() || name[0] == '/') return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (name.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
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

namespace {

struct Member {
  std::uint64_t offset;
  std::uint64_t size;
};

// One shard's samples as a scan finds them, in order.
struct ShardSamples {
  std::vector<std::string> keys;
  std::vector<Member> images;
  std::vector<Member> labels;
  // Each image's restart index (the `rst` member seedloader-pack --jpeg-restart
  // writes; size 0 where there is none); empty when no sample has one.
  std::vector<Member> restarts;
};

// Appends `restart` for sample number `n` (counting from 0) to `restarts`, which
// stays empty until a sample has one.
void add_restart(std::vector<Member>& restarts, std::size_t n, const Member& restart) {
  if (restart.size == 0 && restarts.empty()) return;
  restarts.resize(n, Member{0, 0});
  restarts.push_back(restart);
}

// What index.json (written by seedloader-pack) says of one shard.
// The largest integer index.json may hold, plus one.
constexpr std::uint64_t kMaxIndexInteger = std::uint64_t{1} << 53;

struct IndexedShard {
  std::string name;
  std::string path;  // local path, or the URL (display form) of a remote shard
  std::uint64_t bytes = 0;
  std::uint64_t samples = 0;
  std::uint64_t xxh64 = 0;
};

// Reads the tar headers of the shard open as `file` and calls
// sample(key, image, label, restart) for every sample, in order (restart: the
// `rst` member, size 0 when there is none).
template <typename Sink>
void scan_shard(const FileHandle& file, const std::string& label_ext, Sink&& sample);

}  // namespace

struct TarShards::State {
  State(const std::string& pattern, Compose transform, TarShardsOptions options)
      : pattern(pattern),
        options(std::move(options)),
        output(std::move(transform), this->options.channels, {0, 0},
               "TarShards(" + pattern + ")"),
        layout({output.field("image"), FieldSpec{"label", DType::kI64, {}, false}}) {}

  // Appends the samples of shards[shard] to the index.
  void index_shard(std::uint32_t shard);
  // Reads the index.json at `path`, sizing the data set without opening a shard.
  void read_index(const std::string& path);
  // The same for a URL: the index from the server, the shards through the cache.
  void read_remote_index(remote::ObjectUrl url);
  // Parses index.json's text; `beside(name)` is where shard `name` is.
  template <typename Beside>
  void parse_index(const std::vector<std::uint8_t>& text, Beside&& beside);
  // Opens indexed shard `shard`: the local file, or the cached copy of a remote
  // one (downloaded first when absent).
  FileHandle open_indexed(std::size_t shard) const;
  // With an index: which shard holds sample `index`, and its samples, scanned (and
  // checked against the index) on first use in this process.
  std::pair<std::size_t, const ShardSamples*> indexed(std::uint64_t index) const;

  std::string pattern;
  TarShardsOptions options;
  ImageOutput output;
  SampleLayout layout;
  std::vector<std::string> shards;  // paths; one entry per shard, not per sample
  PathIndex keys;  // key per sample; the label field holds the shard number
  std::vector<Member> images;
  std::vector<Member> labels;
  std::vector<Member> restarts;  // as ShardSamples::restarts

  // From an index.json (empty otherwise): shard i holds samples
  // [first[i], first[i + 1]). Shards are scanned lazily, each process for itself.
  std::string index_path;
  std::vector<IndexedShard> indexed_shards;
  std::vector<std::uint64_t> first;
  mutable std::mutex scan_mutex;
  mutable std::vector<std::unique_ptr<const ShardSamples>> scanned;

  // A remote data set's reader and shard cache; null for local files.
  std::unique_ptr<remote::ObjectReader> reader;
  std::unique_ptr<remote::ShardCache> cache;
  // Pins on the cached shards of the reads will_read() last announced, and
  // downloads ahead of them; both only in a process forked after construction
  // (never in `creator`, which may fork again), under prefetch_mutex. The
  // prefetcher is declared last: destroyed first, its threads stop before the
  // rest goes.
  pid_t creator = ::getpid();
  mutable std::mutex prefetch_mutex;
  mutable std::vector<std::pair<std::size_t, remote::ShardPin>> pins;
  mutable std::unique_ptr<remote::ShardPrefetcher> prefetcher;
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

TarShards::TarShards(const std::string& pattern, Compose transform,
                     TarShardsOptions options) {
  // A URL is known by its display form everywhere (describe(), every message):
  // a password it carries is never shown.
  std::optional<remote::ObjectUrl> url = remote::ObjectUrl::parse(pattern);
  auto s = std::make_unique<State>(url ? url->display() : pattern, std::move(transform),
                                   std::move(options));
  if (url) {
    s->read_remote_index(std::move(*url));
    state_ = std::move(s);
    return;
  }
  if (const std::string index = index_file(pattern); !index.empty()) {
    s->read_index(index);
    state_ = std::move(s);
    return;
  }
  s->shards = expand_shard_pattern(pattern);
  for (std::uint32_t i = 0; i < s->shards.size(); ++i) s->index_shard(i);
  if (s->keys.size() == 0) {
    throw DataError("TarShards(" + pattern + "): the shards hold no samples");
  }
  s->keys.shrink_to_fit();
  s->images.shrink_to_fit();
  s->labels.shrink_to_fit();
  s->restarts.shrink_to_fit();
  state_ = std::move(s);
}

TarShards::~TarShards() = default;

std::uint64_t TarShards::size() const {
  return state_->first.empty() ? state_->keys.size() : state_->first.back();
}

const SampleLayout& TarShards::layout() const { return state_->layout; }

std::string TarShards::describe() const { return "TarShards(" + state_->pattern + ")"; }

void TarShards::will_read(std::span<const std::uint64_t> indices) const noexcept {
  const State& s = *state_;
  if (!s.cache || ::getpid() == s.creator) return;
  try {
    // The distinct shards the reads need, in the order the reads need them.
    std::vector<std::size_t> need;
    for (const std::uint64_t index : indices) {
      if (index >= size()) continue;
      const auto shard = static_cast<std::size_t>(
          std::upper_bound(s.first.begin(), s.first.end(), index) - s.first.begin() - 1);
      if (std::find(need.begin(), need.end(), shard) == need.end()) need.push_back(shard);
    }
    std::lock_guard<std::mutex> lock(s.prefetch_mutex);
    // Pin the cached ones (kept from the last call, or new), so that no eviction
    // takes them before their reads; the first prefetch_shards others that no one
    // is downloading yet are fetched.
    std::vector<std::pair<std::size_t, remote::ShardPin>> pins;
    std::vector<std::size_t> missing;
    for (const std::size_t shard : need) {
      const auto held = std::find_if(s.pins.begin(), s.pins.end(),
                                     [&](const auto& p) { return p.first == shard; });
      if (held != s.pins.end()) {
        pins.emplace_back(shard, std::move(held->second));
        continue;
      }
      const IndexedShard& want = s.indexed_shards[shard];
      const remote::ShardInfo info{want.name, want.bytes, want.xxh64};
      if (remote::ShardPin pin = s.cache->pin(info)) {
        pins.emplace_back(shard, std::move(pin));
      } else if (missing.size() < static_cast<std::size_t>(s.options.prefetch_shards) &&
                 !s.cache->downloading(info)) {
        // One being downloaded (by another worker, often) is left to it: the
        // threads take the next ones.
        missing.push_back(shard);
      }
    }
    s.pins = std::move(pins);  // unpins the shards no read announced now needs
    if (!s.prefetcher) {
      if (missing.empty()) return;  // no thread until one is needed
      s.prefetcher = std::make_unique<remote::ShardPrefetcher>(
          [&s](std::size_t shard) {
            const IndexedShard& want = s.indexed_shards[shard];
            s.cache->ensure({want.name, want.bytes, want.xxh64},
                            remote::ShardCache::Need::kAhead);
          },
          s.options.prefetch_shards);
    }
    s.prefetcher->want(missing);
  } catch (...) {
    // No thread or no memory: the reads fetch their own shards.
  }
}

std::uint64_t TarShards::read_ahead() const {
  const State& s = *state_;
  if (!s.cache || s.options.prefetch_shards <= 0) return 0;
  std::uint64_t largest = 0;
  for (const IndexedShard& shard : s.indexed_shards)
    largest = std::max(largest, shard.samples);
  return std::min<std::uint64_t>(
      2 * static_cast<std::uint64_t>(s.options.prefetch_shards) * largest, kMaxReadAhead);
}

std::vector<std::uint64_t> TarShards::shard_sizes() const {
  const State& s = *state_;
  std::vector<std::uint64_t> sizes;
  if (!s.first.empty()) {
    for (std::size_t i = 0; i + 1 < s.first.size(); ++i)
      sizes.push_back(s.first[i + 1] - s.first[i]);
    return sizes;
  }
  // Samples are indexed shard after shard; the label field holds the shard number.
  sizes.assign(s.shards.size(), 0);
  for (std::uint64_t i = 0; i < s.keys.size(); ++i)
    ++sizes[static_cast<std::size_t>(s.keys.label(i))];
  return sizes;
}

std::string_view TarShards::key(std::uint64_t index) const {
  if (state_->first.empty()) return state_->keys.path_view(index);
  const auto [shard, samples] = state_->indexed(index);
  return samples->keys[index - state_->first[shard]];
}

void TarShards::State::index_shard(std::uint32_t shard) {
  // Opened (and checked to be a regular file) here, not by libarchive: a FIFO
  // named like a shard must fail, not wait for a writer.
  const FileHandle file(shards[shard]);
  scan_shard(file, options.label_ext,
             [&](const std::string& key, const Member& image, const Member& label,
                 const Member& restart) {
               keys.add(key, static_cast<std::int32_t>(shard));
               add_restart(restarts, images.size(), restart);
               images.push_back(image);
               labels.push_back(label);
             });
}

namespace {

template <typename Sink>
void scan_shard(const FileHandle& file, const std::string& label_ext, Sink&& sample) {
  const std::string& path = file.path();
  const std::uint64_t shard_size = file.size();
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), &archive_read_free);
  archive_read_support_format_tar(a.get());
  if (archive_read_open_fd(a.get(), file.fd(), 1 << 16) != ARCHIVE_OK) {
    throw DataError("shard " + path + ": " + archive_error_string(a.get()));
  }
  std::string current_key;
  bool open_sample = false;
  Member image{}, label{}, restart{};
  bool have_image = false, have_label = false, have_restart = false;
  std::unordered_set<std::string> seen_keys;  // keys finished in this shard

  auto finish = [&]() {
    if (!open_sample) return;
    if (!have_image || !have_label) {
      throw DataError("shard " + path + ": sample '" + current_key + "' has no " +
                      (have_image ? "." + label_ext + " label" : "image") + " member");
    }
    sample(current_key, image, label, have_restart ? restart : Member{0, 0});
    seen_keys.insert(current_key);
    open_sample = have_image = have_label = have_restart = false;
  };

  archive_entry* entry = nullptr;
  while (true) {
    const int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    // ARCHIVE_WARN is not fatal by itself: libarchive warns, for instance, when a
    // pax header's UTF-8 name has no spelling in the current locale (LANG=C), and
    // still hands over the entry. Everything below checks the entry anyway.
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      throw DataError("shard " + path + ": " +
                      (archive_error_string(a.get()) ? archive_error_string(a.get())
                                                     : "unreadable tar header"));
    }
    if (archive_filter_count(a.get()) > 1) {
      throw DataError("shard " + path + " is compressed; random access needs plain tar");
    }
    // The UTF-8 name when libarchive has one (pax names are UTF-8), so keys are
    // the same in every locale; else the header's bytes as they are.
    const char* raw_name = archive_entry_pathname_utf8(entry);
    if (!raw_name) raw_name = archive_entry_pathname(entry);
    if (!raw_name) {
      throw DataError("shard " + path + ": a member's name cannot be read" +
                      (archive_error_string(a.get())
                           ? std::string(": ") + archive_error_string(a.get())
                           : std::string()));
    }
    const std::string name = raw_name;
    const auto where = [&] { return "shard " + path + ": member '" + name + "'"; };
    if (!safe_member_name(name)) {
      throw DataError(where() + ": absolute or '..' names are rejected");
    }
    if (archive_entry_filetype(entry) == AE_IFDIR) continue;
    if (archive_entry_hardlink(entry) || archive_entry_symlink(entry) ||
        archive_entry_filetype(entry) != AE_IFREG) {
      throw DataError(where() + ": links and special files are rejected");
    }
    if (archive_entry_sparse_count(entry) > 0 || !archive_entry_size_is_set(entry)) {
      throw DataError(where() + ": sparse members are rejected");
    }
    // The tar reader has consumed this member's headers: the position is where
    // its data starts.
    const auto offset = static_cast<std::uint64_t>(archive_filter_bytes(a.get(), 0));
    const auto size = static_cast<std::uint64_t>(archive_entry_size(entry));
    if (offset > shard_size || size > shard_size - offset) {
      throw DataError(where() + ": data runs past the end of the shard");
    }
    const std::size_t slash = name.rfind('/');
    const std::size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
    if (dot == std::string::npos) continue;  // no extension: not part of a sample
    const std::string key = name.substr(0, dot);
    const std::string ext = name.substr(dot + 1);
    if (!open_sample || key != current_key) {
      finish();
      if (seen_keys.count(key) != 0) {
        throw DataError(where() + ": sample '" + key + "' is split across the shard");
      }
      current_key = key;
      open_sample = true;
    }
    if (ext == label_ext) {
      if (have_label) throw DataError(where() + ": a second label for '" + key + "'");
      label = {offset, size};
      have_label = true;
    } else if (ext == "rst") {
      if (have_restart)
        throw DataError(where() + ": a second restart index for '" + key + "'");
      restart = {offset, size};
      have_restart = true;
    } else if (is_image_extension(ext)) {
      if (have_image) throw DataError(where() + ": a second image for '" + key + "'");
      image = {offset, size};
      have_image = true;
    }
  }
  finish();
}

}  // namespace

void TarShards::State::read_index(const std::string& path) {
  index_path = path;
  std::vector<std::uint8_t> text;
  {
    const FileHandle file(path);
    if (file.size() > options.max_index_bytes)
      throw DataError("TarShards: index " + path + " has " + std::to_string(file.size()) +
                      " bytes, more than the limit of " +
                      std::to_string(options.max_index_bytes) + " (max_index_bytes)");
    file.read_at(0, file.size(), text);
  }
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  parse_index(text, [&](const std::string& name) { return (dir / name).string(); });
}

void TarShards::State::read_remote_index(remote::ObjectUrl url) {
  // The folder's URL, with or without its trailing '/', or its index.json.
  // (An s3:// URL's key may be empty: the bucket's top.)
  const std::size_t slash = url.path.rfind('/');
  const std::string last = url.path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (last != "index.json") {
    if (!url.path.empty() && url.path.back() != '/') url.path += '/';
    url = url.sibling("index.json");
  }
  index_path = url.display();
  if (options.max_attempts < 1 || !(options.stall_timeout_s > 0) ||
      !(options.min_rate_bytes_s >= 1) || !(options.deadline_s >= 0)) {
    throw ConfigError("TarShards(" + pattern +
                      "): max_attempts must be >= 1, stall_timeout_s > 0, "
                      "min_rate_bytes_s >= 1 and deadline_s >= 0; got " +
                      std::to_string(options.max_attempts) + ", " +
                      std::to_string(options.stall_timeout_s) + ", " +
                      std::to_string(options.min_rate_bytes_s) + " and " +
                      std::to_string(options.deadline_s));
  }
  reader = std::make_unique<remote::ObjectReader>(
      remote::FetchOptions{.max_attempts = options.max_attempts,
                           .stall_timeout_s = options.stall_timeout_s,
                           .min_rate_bytes_s = options.min_rate_bytes_s,
                           .deadline_s = options.deadline_s,
                           .anonymous = options.anonymous});
  std::vector<std::uint8_t> text;
  if (!reader->read_if_present(url, text, options.max_index_bytes)) {
    throw DataError("TarShards(" + pattern + "): no index at " + index_path +
                    "; a remote data set is read through the index.json that " +
                    "seedloader-pack writes: run seedloader-pack SPEC OUT/ and upload " +
                    "OUT/ whole");
  }
  parse_index(text, [&](const std::string& name) { return url.sibling(name).display(); });
  std::uint64_t largest = 0;
  for (const IndexedShard& shard : indexed_shards)
    largest = std::max(largest, shard.bytes);
  if (options.prefetch_shards < 0) {
    throw ConfigError("TarShards(" + pattern + "): prefetch_shards must be >= 0, got " +
                      std::to_string(options.prefetch_shards));
  }
  if (options.cache_limit != 0 && options.cache_limit < largest) {
    throw ConfigError("TarShards(" + pattern + "): cache_limit " +
                      std::to_string(options.cache_limit) +
                      " is smaller than its largest " + "shard (" +
                      std::to_string(largest) + " bytes)");
  }
  cache = std::make_unique<remote::ShardCache>(
      url, options.cache_dir.empty() ? remote::default_cache_dir() : options.cache_dir,
      options.cache_limit, *reader,
      options.cache_verify == CacheVerify::kHash   ? remote::ShardCache::Verify::kHash
      : options.cache_verify == CacheVerify::kNone ? remote::ShardCache::Verify::kNone
                                                   : remote::ShardCache::Verify::kStat);
}

namespace {

// A shard's name as a message may show it: bytes outside printable ASCII, and
// quotes, escaped.
std::string quoted_name(const std::string& name) {
  std::string out = "'";
  for (const unsigned char ch : name.substr(0, 80)) {
    if (ch < 0x20 || ch >= 0x7f || ch == '\'' || ch == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", ch);
      out += hex;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + (name.size() > 80 ? "…'" : "'");
}

// Whether `name` can name a shard: one path segment of letters, digits, '.', '_'
// and '-', not starting with '.', at most 200 bytes (the cache adds up to 43 to
// it, within a file system's 255). Nothing a server or a file
// system could read as another place ("..", "%2e%2e%2f", a NUL that ends the
// name early) passes.
bool safe_shard_name(const std::string& name) {
  if (name.empty() || name.size() > 200 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
  });
}

}  // namespace

template <typename Beside>
void TarShards::State::parse_index(const std::vector<std::uint8_t>& text,
                                   Beside&& beside) {
  const auto fail = [&](const std::string& why) -> DataError {
    return DataError("TarShards: index " + index_path + ": " + why);
  };
  // Integers are exact: no fraction, no sign, below 2^53 (what every JSON
  // writer keeps exact).
  const auto whole = [&](const nlohmann::json& parent, const char* key,
                         const std::string& where) -> std::uint64_t {
    const auto it = parent.find(key);
    if (it == parent.end()) throw fail(where + "has no \"" + key + "\"");
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() >= kMaxIndexInteger) {
      // A number or a string is shown; anything else by its type (dump() of a
      // deeply nested array would recurse as deep).
      const std::string shown = it->is_primitive()
                                    ? it->dump().substr(0, 40)
                                    : "a JSON " + std::string(it->type_name());
      throw fail(where + "\"" + key + "\" is " + shown +
                 ", not a whole number from 0 to 2^53 - 1");
    }
    return it->get<std::uint64_t>();
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
    if (!j.is_object()) throw fail("not a JSON object");
    if (j.value("format", std::string()) != "seedloader.shards")
      throw fail("format is not \"seedloader.shards\"");
    if (const std::uint64_t version = whole(j, "format_version", ""); version != 1)
      throw fail("format_version " + std::to_string(version) +
                 " is not 1 (written by a newer seedloader-pack?)");
    const auto shards = j.find("shards");
    if (shards == j.end() || !shards->is_array())
      throw fail("\"shards\" is missing or not a list");
    std::unordered_set<std::string> names;
    first.push_back(0);
    for (const nlohmann::json& e : *shards) {
      const std::string at = "shard " + std::to_string(indexed_shards.size()) + ": ";
      if (!e.is_object() || !e.contains("name") || !e.at("name").is_string())
        throw fail(at + "not an object with a string \"name\"");
      IndexedShard shard;
      shard.name = e.at("name").get<std::string>();
      const std::string& name = shard.name;
      if (!safe_shard_name(name))
        throw fail("shard name " + quoted_name(name) +
                   " is not one file name of at most 200 letters, digits, '.', '_' "
                   "and '-' (not starting with '.')");
      if (!names.insert(name).second) throw fail("shard " + name + " is listed twice");
      const std::string where = "shard " + name + ": ";
      shard.path = beside(name);
      shard.bytes = whole(e, "bytes", where);
      shard.samples = whole(e, "samples", where);
      if (!e.contains("xxh64") || !e.at("xxh64").is_string())
        throw fail(where + "\"xxh64\" is missing or not a string");
      const std::string hash = e.at("xxh64").get<std::string>();
      auto [end, ec] =
          std::from_chars(hash.data(), hash.data() + hash.size(), shard.xxh64, 16);
      if (hash.size() != 16 || ec != std::errc() || end != hash.data() + hash.size())
        throw fail(where + "xxh64 " + quoted_name(hash) + " is not 16 hex digits");
      if (shard.samples == 0) throw fail("shard " + name + " holds no samples");
      // Every sample takes at least one 512-byte tar header.
      if (shard.samples > shard.bytes / 512)
        throw fail(where + "\"samples\" " + std::to_string(shard.samples) +
                   " cannot fit in its \"bytes\" " + std::to_string(shard.bytes) +
                   " (a sample takes 512 bytes at least)");
      first.push_back(first.back() + shard.samples);  // < 2^54: no overflow
      if (first.back() >= kMaxIndexInteger)
        throw fail("its shards hold 2^53 samples or more");
      indexed_shards.push_back(std::move(shard));
    }
    if (indexed_shards.empty()) throw fail("it lists no shards");
    const std::uint64_t total = whole(j, "samples", "");
    if (total != first.back())
      throw fail("samples is " + std::to_string(total) + " but its shards hold " +
                 std::to_string(first.back()));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("not a valid index (") + e.what() + ")");
  }
  scanned.resize(indexed_shards.size());
}

FileHandle TarShards::State::open_indexed(std::size_t shard) const {
  const IndexedShard& want = indexed_shards[shard];
  if (!cache) return FileHandle(want.path);
  // Opened by the lookup itself: another process may evict the cached copy the
  // moment after, and the descriptor keeps its bytes.
  remote::ShardCache::Opened opened = cache->open({want.name, want.bytes, want.xxh64});
  return FileHandle(opened.fd, std::move(opened.path));
}

std::pair<std::size_t, const ShardSamples*> TarShards::State::indexed(
    std::uint64_t index) const {
  const auto shard = static_cast<std::size_t>(
      std::upper_bound(first.begin(), first.end(), index) - first.begin() - 1);
  {
    std::lock_guard<std::mutex> lock(scan_mutex);
    if (scanned[shard]) return {shard, scanned[shard].get()};
  }
  // Opened, and for a remote shard downloaded, outside the lock: other threads
  // need it meanwhile for shards already scanned.
  const FileHandle file = open_indexed(shard);
  std::lock_guard<std::mutex> lock(scan_mutex);
  if (!scanned[shard]) {
    const IndexedShard& want = indexed_shards[shard];
    const auto fail = [&](const std::string& why) -> DataError {
      return DataError("shard " + want.path + " disagrees with its index " + index_path +
                       ": " + why);
    };
    if (file.size() != want.bytes)
      throw fail("it has " + std::to_string(file.size()) + " bytes, the index says " +
                 std::to_string(want.bytes));
    // The cache checked a remote shard's hash before it let anyone see the file,
    // and checks its copy as cache_verify says.
    if (options.verify_shards && !cache &&
        remote::file_xxh64(file.fd(), file.size(), "shard " + file.path()) != want.xxh64)
      throw fail("its XXH64 differs from the index's (the file changed or is damaged)");
    auto samples = std::make_unique<ShardSamples>();
    scan_shard(file, options.label_ext,
               [&](const std::string& key, const Member& image, const Member& label,
                   const Member& restart) {
                 add_restart(samples->restarts, samples->keys.size(), restart);
                 samples->keys.push_back(key);
                 samples->images.push_back(image);
                 samples->labels.push_back(label);
               });
    if (samples->keys.size() != want.samples)
      throw fail("it holds " + std::to_string(samples->keys.size()) +
                 " samples, the index says " + std::to_string(want.samples));
    scanned[shard] = std::move(samples);
  }
  return {shard, scanned[shard].get()};
}

void TarShards::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const State& s = *state_;
  if (index >= size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  thread_local std::vector<std::uint8_t> bytes, restart_bytes;
  std::string shard_path;
  std::string_view key;
  try {
    Member image{}, label{}, restart{0, 0};
    // Opened per sample: a dataset of thousands of shards must not hold (and
    // hand every worker) a descriptor per shard.
    FileHandle shard;
    if (s.first.empty()) {
      shard_path = s.shards[static_cast<std::size_t>(s.keys.label(index))];
      key = s.keys.path_view(index);
      image = s.images[index];
      label = s.labels[index];
      if (index < s.restarts.size()) restart = s.restarts[index];
      shard = FileHandle(shard_path);
    } else {
      const auto [n, samples] = s.indexed(index);
      shard_path = s.indexed_shards[n].path;
      const std::uint64_t at = index - s.first[n];
      key = samples->keys[at];
      image = samples->images[at];
      label = samples->labels[at];
      if (at < samples->restarts.size()) restart = samples->restarts[at];
      shard = s.open_indexed(n);
    }
    shard.read_at(label.offset, label.size, bytes);
    const std::int64_t value = parse_label(bytes);
    shard.read_at(image.offset, image.size, bytes);
    restart_bytes.clear();
    if (restart.size > 0) shard.read_at(restart.offset, restart.size, restart_bytes);
    const EncodedImage source(bytes, s.options.max_pixels, s.options.channels,
                              restart_bytes);
    s.output.write(source, rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = value;
  } catch (...) {
    rethrow_as_data_error(
        describe() + ": sample " + std::to_string(index) + " (shard " + shard_path +
        (key.empty() ? std::string() : ", member '" + std::string(key) + "'") + ")");
  }
}

}  // namespace seedloader
