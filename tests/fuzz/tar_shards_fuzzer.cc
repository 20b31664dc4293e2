// Fuzzes TarShards' index building (libarchive walk, member-name checks, sample
// grouping) over a one-shard dataset whose shard is the input, then reads the
// first, middle and last samples: the label text and the image, decoded through
// RandomResizedCrop so JPEGs take the region-decode path.
#include <cstdint>

#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/sample_buffer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string path = fuzz::scratch() + "shard.tar";
  fuzz::write_file(path, data, size);
  try {
    TarShardsOptions options;
    options.max_pixels = 1 << 20;  // the cap is checked on the header; keep decodes quick
    TarShards dataset(path, parse_transform_spec("rrc:8,u8"), options);
    for (std::uint64_t i = 0; i < dataset.size(); ++i) (void)dataset.key(i);
    fuzz::read_samples(dataset);
  } catch (const Error&) {
  }
  return 0;
}
