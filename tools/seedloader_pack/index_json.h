// index.json of a packed folder, the contract between seedloader-pack and the
// readers of its output:
//   {"format": "seedloader.shards", "format_version": 1, "samples": N,
//    "fields": [sorted member extensions, e.g. "cls", "jpg"],
//    "shards": [{"name": "000000.tar", "bytes": B, "samples": n,
//                "xxh64": "16 lowercase hex digits"}, ...]}
// "name" is relative to the folder; "bytes" the file's size; "xxh64" the XXH64
// (seed 0) of the whole file, as `xxhsum -H1` prints it; the shards' samples add
// up to "samples". Stateless.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tools/seedloader_pack/shard_writer.h"

namespace seedloader::pack {

inline constexpr const char* kIndexName = "index.json";

// Writes DIR/index.json through a temporary name, fsynced, then renamed.
void write_index_json(const std::string& dir, const std::vector<ShardInfo>& shards,
                      const std::set<std::string>& fields);

}  // namespace seedloader::pack
