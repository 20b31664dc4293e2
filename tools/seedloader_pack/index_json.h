// Writes index.json, the format shards/index_format.h owns, into a packed folder.
// Stateless.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "shards/index_format.h"

namespace seedloader::pack {

// Writes DIR/index.json through a temporary name, fsynced, then renamed.
void write_index_json(const std::string& dir,
                      const std::vector<shards::ShardEntry>& shards,
                      const std::set<std::string>& fields);

}  // namespace seedloader::pack
