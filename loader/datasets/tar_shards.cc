#include "seedloader/datasets/tar_shards.h"

#include <archive.h>
#include <archive_entry.h>
#include <glob.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <unordered_set>

#include "loader/datasets/file_io.h"
#include "loader/datasets/image_decode.h"
#include "loader/datasets/image_output.h"
#include "loader/datasets/path_index.h"
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

struct TarShards::State {
  struct Member {
    std::uint64_t offset;
    std::uint64_t size;
  };

  State(const std::string& pattern, Compose transform, TarShardsOptions options)
      : pattern(pattern),
        options(std::move(options)),
        output(std::move(transform), this->options.channels, {0, 0},
               "TarShards(" + pattern + ")"),
        layout({output.field("image"), FieldSpec{"label", DType::kI64, {}, false}}) {}

  // Appends the samples of shards[shard] to the index.
  void index_shard(std::uint32_t shard);

  std::string pattern;
  TarShardsOptions options;
  ImageOutput output;
  SampleLayout layout;
  std::vector<std::string> shards;  // paths; one entry per shard, not per sample
  PathIndex keys;  // key per sample; the label field holds the shard number
  std::vector<Member> images;
  std::vector<Member> labels;
};

TarShards::TarShards(const std::string& pattern, Compose transform,
                     TarShardsOptions options) {
  auto s = std::make_unique<State>(pattern, std::move(transform), std::move(options));
  s->shards = expand_shard_pattern(pattern);
  for (std::uint32_t i = 0; i < s->shards.size(); ++i) s->index_shard(i);
  if (s->keys.size() == 0) {
    throw DataError("TarShards(" + pattern + "): the shards hold no samples");
  }
  s->keys.shrink_to_fit();
  s->images.shrink_to_fit();
  s->labels.shrink_to_fit();
  state_ = std::move(s);
}

TarShards::~TarShards() = default;

std::uint64_t TarShards::size() const { return state_->keys.size(); }

const SampleLayout& TarShards::layout() const { return state_->layout; }

std::string TarShards::describe() const { return "TarShards(" + state_->pattern + ")"; }

std::string_view TarShards::key(std::uint64_t index) const {
  return state_->keys.path_view(index);
}

void TarShards::State::index_shard(std::uint32_t shard) {
  const std::string& path = shards[shard];
  // Opened (and checked to be a regular file) here, not by libarchive: a FIFO
  // named like a shard must fail, not wait for a writer.
  const FileHandle file(path);
  const std::uint64_t shard_size = file.size();
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), &archive_read_free);
  archive_read_support_format_tar(a.get());
  if (archive_read_open_fd(a.get(), file.fd(), 1 << 16) != ARCHIVE_OK) {
    throw DataError("shard " + path + ": " + archive_error_string(a.get()));
  }
  std::string current_key;
  bool open_sample = false;
  Member image{}, label{};
  bool have_image = false, have_label = false;
  std::unordered_set<std::string> seen_keys;  // keys finished in this shard

  auto finish = [&]() {
    if (!open_sample) return;
    if (!have_image || !have_label) {
      throw DataError("shard " + path + ": sample '" + current_key + "' has no " +
                      (have_image ? "." + options.label_ext + " label" : "image") +
                      " member");
    }
    keys.add(current_key, static_cast<std::int32_t>(shard));
    images.push_back(image);
    labels.push_back(label);
    seen_keys.insert(current_key);
    open_sample = have_image = have_label = false;
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
    if (ext == options.label_ext) {
      if (have_label) throw DataError(where() + ": a second label for '" + key + "'");
      label = {offset, size};
      have_label = true;
    } else if (is_image_extension(ext)) {
      if (have_image) throw DataError(where() + ": a second image for '" + key + "'");
      image = {offset, size};
      have_image = true;
    }
  }
  finish();
}

void TarShards::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const State& s = *state_;
  if (index >= s.keys.size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  thread_local std::vector<std::uint8_t> bytes;
  try {
    // Opened per sample: a dataset of thousands of shards must not hold (and
    // hand every worker) a descriptor per shard.
    const FileHandle shard(s.shards[static_cast<std::size_t>(s.keys.label(index))]);
    shard.read_at(s.labels[index].offset, s.labels[index].size, bytes);
    const std::int64_t label = parse_label(bytes);
    shard.read_at(s.images[index].offset, s.images[index].size, bytes);
    const EncodedImage source(bytes, s.options.max_pixels, s.options.channels);
    s.output.write(source, rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = label;
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index) + " (shard " +
                          s.shards[static_cast<std::size_t>(s.keys.label(index))] +
                          ", member '" + std::string(s.keys.path_view(index)) + "')");
  }
}

}  // namespace seedloader
