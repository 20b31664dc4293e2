#include "tools/seedloader_pack/index_json.h"

#include <nlohmann/json.hpp>

#include "tools/seedloader_pack/output_file.h"

namespace seedloader::pack {

void write_index_json(const std::string& dir, const std::vector<ShardInfo>& shards,
                      const std::set<std::string>& fields) {
  nlohmann::ordered_json j;
  std::uint64_t samples = 0;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ShardInfo& s : shards) {
    samples += s.samples;
    list.push_back({{"name", s.name},
                    {"bytes", s.bytes},
                    {"samples", s.samples},
                    {"xxh64", hex64(s.xxh64)}});
  }
  j["format"] = "seedloader.shards";
  j["format_version"] = 1;
  j["samples"] = samples;
  j["fields"] = std::vector<std::string>(fields.begin(), fields.end());
  j["shards"] = std::move(list);
  const std::string text = j.dump(1) + "\n";
  OutputFile file(dir, kIndexName);
  file.write(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  file.commit();
}

}  // namespace seedloader::pack
