// A packed data set for the remote tests and one epoch of a loader over it, so a
// test compares what a URL delivers with what the folder on disk does: 40 JPEGs
// of 2 classes packed by seedloader-pack (SEEDLOADER_PACK) into shards of at most
// 16 KiB, a few samples each.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "seedloader/data_loader.h"
#include "seedloader/datasets/tar_shards.h"
#include "tests/common/epoch_bytes.h"
#include "tests/common/temp_dir.h"

namespace seedloader::testing_util {

inline constexpr const char* kTransform = "rrc:24,hflip";

// Packs the data set under root/data/. Returns the shards' names and sizes.
std::map<std::string, std::uint64_t> write_packed(const TempDir& root);

// TarShards options reading through the cache `dir` (bounded by `limit`, 0: none),
// with 3 attempts and a 5 s stall bound, so a failing test ends soon.
TarShardsOptions cached_in(const std::string& dir, std::uint64_t limit = 0);

// A shuffled loader of batches of 4 with `workers` workers, seed 5, per-sample
// streams.
LoaderOptions loader_options(int workers, ShuffleOrder order = ShuffleOrder::kNumpy);

// One epoch from batch `start` on (a resumed epoch when start > 0).
EpochBytes run_epoch(const Dataset& data, int workers, std::uint64_t epoch,
                     std::uint64_t start = 0, ShuffleOrder order = ShuffleOrder::kNumpy);

}  // namespace seedloader::testing_util
