#include "shards/index_format.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "seedloader/error.h"

namespace seedloader::shards {
namespace {

// The largest integer index.json may hold, plus one: what every JSON writer keeps
// exact.
constexpr std::uint64_t kMaxIndexInteger = std::uint64_t{1} << 53;

}  // namespace

std::vector<ShardEntry> parse_index(std::span<const std::uint8_t> text,
                                    const std::string& where) {
  const auto fail = [&](const std::string& why) -> DataError {
    return DataError("index " + where + ": " + why);
  };
  // Integers are exact: no fraction, no sign, below 2^53.
  const auto whole = [&](const nlohmann::json& parent, const char* key,
                         const std::string& at) -> std::uint64_t {
    const auto it = parent.find(key);
    if (it == parent.end()) throw fail(at + "has no \"" + key + "\"");
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() >= kMaxIndexInteger) {
      // A number or a string is shown; anything else by its type (dump() of a
      // deeply nested array would recurse as deep).
      const std::string shown = it->is_primitive()
                                    ? it->dump().substr(0, 40)
                                    : "a JSON " + std::string(it->type_name());
      throw fail(at + "\"" + key + "\" is " + shown +
                 ", not a whole number from 0 to 2^53 - 1");
    }
    return it->get<std::uint64_t>();
  };
  std::vector<ShardEntry> entries;
  try {
    const nlohmann::json j = nlohmann::json::parse(text.begin(), text.end());
    if (!j.is_object()) throw fail("not a JSON object");
    if (j.value("format", std::string()) != kIndexFormat)
      throw fail("format is not \"" + std::string(kIndexFormat) + "\"");
    if (const std::uint64_t version = whole(j, "format_version", "");
        version != kIndexVersion)
      throw fail("format_version " + std::to_string(version) + " is not " +
                 std::to_string(kIndexVersion) +
                 " (written by a newer seedloader-pack?)");
    const auto shards = j.find("shards");
    if (shards == j.end() || !shards->is_array())
      throw fail("\"shards\" is missing or not a list");
    std::unordered_set<std::string> names;
    std::uint64_t samples = 0;
    for (const nlohmann::json& e : *shards) {
      const std::string at = "shard " + std::to_string(entries.size()) + ": ";
      if (!e.is_object() || !e.contains("name") || !e.at("name").is_string())
        throw fail(at + "not an object with a string \"name\"");
      ShardEntry shard;
      shard.name = e.at("name").get<std::string>();
      const std::string& name = shard.name;
      if (!safe_shard_name(name))
        throw fail("shard name " + quoted_name(name) +
                   " is not one file name of at most 200 letters, digits, '.', '_' "
                   "and '-' (not starting with '.')");
      if (!names.insert(name).second) throw fail("shard " + name + " is listed twice");
      const std::string in = "shard " + name + ": ";
      shard.bytes = whole(e, "bytes", in);
      shard.samples = whole(e, "samples", in);
      if (!e.contains("xxh64") || !e.at("xxh64").is_string())
        throw fail(in + "\"xxh64\" is missing or not a string");
      const std::string hash = e.at("xxh64").get<std::string>();
      auto [end, ec] =
          std::from_chars(hash.data(), hash.data() + hash.size(), shard.xxh64, 16);
      if (hash.size() != 16 || ec != std::errc() || end != hash.data() + hash.size())
        throw fail(in + "xxh64 " + quoted_name(hash) + " is not 16 hex digits");
      if (shard.samples == 0) throw fail("shard " + name + " holds no samples");
      // Every sample takes at least one 512-byte tar header.
      if (shard.samples > shard.bytes / 512)
        throw fail(in + "\"samples\" " + std::to_string(shard.samples) +
                   " cannot fit in its \"bytes\" " + std::to_string(shard.bytes) +
                   " (a sample takes 512 bytes at least)");
      samples += shard.samples;  // < 2^54: no overflow
      if (samples >= kMaxIndexInteger) throw fail("its shards hold 2^53 samples or more");
      entries.push_back(std::move(shard));
    }
    if (entries.empty()) throw fail("it lists no shards");
    const std::uint64_t total = whole(j, "samples", "");
    if (total != samples)
      throw fail("samples is " + std::to_string(total) + " but its shards hold " +
                 std::to_string(samples));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("not a valid index (") + e.what() + ")");
  }
  return entries;
}

std::string index_text(const std::vector<ShardEntry>& shards,
                       const std::set<std::string>& fields) {
  nlohmann::ordered_json j;
  std::uint64_t samples = 0;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ShardEntry& s : shards) {
    samples += s.samples;
    list.push_back({{"name", s.name},
                    {"bytes", s.bytes},
                    {"samples", s.samples},
                    {"xxh64", hex64(s.xxh64)}});
  }
  j["format"] = kIndexFormat;
  j["format_version"] = kIndexVersion;
  j["samples"] = samples;
  j["fields"] = std::vector<std::string>(fields.begin(), fields.end());
  j["shards"] = std::move(list);
  return j.dump(1) + "\n";
}

bool safe_shard_name(std::string_view name) {
  if (name.empty() || name.size() > 200 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
  });
}

std::string quoted_name(std::string_view name) {
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

std::string hex64(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::uint64_t file_xxh64(int fd, std::uint64_t size, const std::string& what) {
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(
      XXH64_createState(), &XXH64_freeState);
  if (!state || XXH64_reset(state.get(), 0) != XXH_OK) throw std::bad_alloc();
  std::vector<char> buffer(1 << 20);
  for (std::uint64_t at = 0; at < size;) {
    const ssize_t n =
        ::pread(fd, buffer.data(), std::min<std::uint64_t>(buffer.size(), size - at),
                static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw DataError(what + ": cannot be read at byte " + std::to_string(at) + ": " +
                      std::strerror(errno));
    }
    if (n == 0) {
      throw DataError(what + ": ends at byte " + std::to_string(at) + " of " +
                      std::to_string(size));
    }
    XXH64_update(state.get(), buffer.data(), static_cast<std::size_t>(n));
    at += static_cast<std::uint64_t>(n);
  }
  return XXH64_digest(state.get());
}

}  // namespace seedloader::shards
