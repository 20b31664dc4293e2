// The index of a packed folder, index.json: the contract between seedloader-pack,
// which writes it, and TarShards and the shard cache, which read it:
//   {"format": "seedloader.shards", "format_version": 1, "samples": N,
//    "fields": [sorted member extensions, e.g. "cls", "jpg"],
//    "shards": [{"name": "000000.tar", "bytes": B, "samples": n,
//                "xxh64": "16 lowercase hex digits"}, ...]}
// "name" is one file name beside index.json; "bytes" the file's size; "xxh64" the
// XXH64 (seed 0) of the whole file, as `xxhsum -H1` prints it; the shards' samples
// add up to "samples". Integers are exact (below 2^53). A reader refuses any other
// format or version, and every value that breaks these rules, naming the index,
// the shard and the field. Stateless; safe across threads.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace seedloader::shards {

inline constexpr std::string_view kIndexName = "index.json";
inline constexpr std::string_view kIndexFormat = "seedloader.shards";
inline constexpr std::uint64_t kIndexVersion = 1;

// One shard as the index lists it. For shards named by a pattern instead (no
// index), `name` is the file's path, `bytes` its size, `samples` what a scan
// counted, and `xxh64` 0: unknown.
struct ShardEntry {
  std::string name;
  std::uint64_t bytes = 0;
  std::uint64_t samples = 0;
  std::uint64_t xxh64 = 0;
};

// The shards index.json `text` lists, in order, every rule above checked. Throws
// DataError "index WHERE: why" (WHERE: the index's path or URL).
std::vector<ShardEntry> parse_index(std::span<const std::uint8_t> text,
                                    const std::string& where);
// index.json's text for `shards`, whose members have the extensions `fields`.
std::string index_text(const std::vector<ShardEntry>& shards,
                       const std::set<std::string>& fields);

// Whether `name` can name a shard: one path segment of letters, digits, '.', '_'
// and '-', not starting with '.', at most 200 bytes (the shard cache adds up to
// 43 to it, within a file system's 255). Nothing a server or a file system could
// read as another place ("..", "%2e%2e%2f", a NUL that ends the name early) passes.
bool safe_shard_name(std::string_view name);
// `name` as a message may show it: quoted, bytes outside printable ASCII and
// quotes escaped, cut at 80 bytes.
std::string quoted_name(std::string_view name);

// "%016x": how the index writes an XXH64.
std::string hex64(std::uint64_t value);
// XXH64 (seed 0) of the first `size` bytes of the open file `fd`, read in 1 MiB
// pieces. Throws DataError naming `what` when they cannot all be read.
std::uint64_t file_xxh64(int fd, std::uint64_t size, const std::string& what);

}  // namespace seedloader::shards
