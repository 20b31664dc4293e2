// Fuzzes the index.json reader of a packed folder (TarShards over a folder: the
// JSON, the shard names, the integers and their ranges, the totals), then sizes
// the data set and reads its first and last samples, whose shards do not exist:
// everything must end in a seedloader::Error naming the index or the shard.
#include <cstdint>

#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/sample_buffer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  fuzz::write_file(fuzz::scratch() + "index.json", data, size);
  try {
    TarShardsOptions options;
    options.max_index_bytes = 1 << 16;
    TarShards dataset(fuzz::scratch(), parse_transform_spec("centercrop:4,u8"), options);
    std::uint64_t total = 0;
    for (const std::uint64_t n : dataset.shard_sizes()) total += n;
    if (total != dataset.size()) __builtin_trap();  // the index's totals were checked
    fuzz::read_samples(dataset);
  } catch (const Error&) {
  }
  return 0;
}
