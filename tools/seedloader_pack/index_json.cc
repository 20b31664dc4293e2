#include "tools/seedloader_pack/index_json.h"

#include "tools/seedloader_pack/output_file.h"

namespace seedloader::pack {

void write_index_json(const std::string& dir,
                      const std::vector<shards::ShardEntry>& shards,
                      const std::set<std::string>& fields) {
  const std::string text = shards::index_text(shards, fields);
  OutputFile file(dir, std::string(shards::kIndexName));
  file.write(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  file.commit();
}

}  // namespace seedloader::pack
