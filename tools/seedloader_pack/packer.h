// pack(): writes a PackSource as WebDataset shards in an output folder —
// OUT/000000.tar, 000001.tar, ... (plain ustar, each sample's members together,
// named KEY.EXT with KEY the sample's index in the source, zero-padded to nine
// digits or more), then OUT/index.json (the format shards/index_format.h owns),
// written last, so a folder with an index.json is complete. A shard is closed
// before a sample that would take it past `shard_bytes`; a sample larger than the
// limit on its own goes alone into a shard, which then exceeds it.
// Single-threaded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tools/seedloader_pack/pack_source.h"

namespace seedloader::pack {

struct PackOptions {
  std::uint64_t shard_bytes = std::uint64_t{1} << 30;
  // Set: samples are written in the order epoch_permutation(n, seed, 0) gives;
  // unset: in the source's order.
  std::optional<std::uint64_t> shuffle_seed;
  // Replace an earlier pack in the output folder instead of refusing it.
  bool force = false;
  // Rewrite every baseline JPEG losslessly with restart markers that cut each MCU
  // row into intervals, and store the markers' offsets as the sample's `rst`
  // member (loader/datasets/jpeg_restart.h), so a crop entropy-decodes only the
  // intervals around it.
  bool jpeg_restart = false;

  // Throws ConfigError for a zero shard size.
  void validate() const;
};

struct PackSummary {
  std::uint64_t samples = 0;
  std::uint64_t shards = 0;
  std::uint64_t bytes = 0;
  // With jpeg_restart: JPEGs rewritten, their bytes before and after (the
  // `rst` members not counted), and why the others were kept as they were
  // ("progressive", "CMYK", "corrupt", "not a JPEG", ...) with how many.
  std::uint64_t restarted = 0;
  std::uint64_t restart_bytes_before = 0;
  std::uint64_t restart_bytes_after = 0;
  std::map<std::string, std::uint64_t> kept;
};

// Creates `out` if missing. Throws ConfigError when it holds an index.json or a
// .tar file and options.force is false; with force, removes the earlier
// index.json first (the folder is no longer complete), then shards named NNNNNN.tar
// and leftover temporaries. Nothing else in the folder is touched.
void prepare_out_dir(const std::string& out, const PackOptions& options);

// Packs `source` into `out` (prepared by prepare_out_dir). Throws DataError for a
// sample that cannot be read and Error for a file that cannot be written, each
// naming it; shards already renamed stay, index.json is not written.
PackSummary pack(const PackSource& source, const std::string& out,
                 const PackOptions& options);

}  // namespace seedloader::pack
