// Datasets named on the command line: "KIND:ARG", e.g. "synthetic:5000" or
// "imagefolder:/data/train", with a transform chain from transforms/spec.h.
// "tar:URL" reads through the shard cache in $SEEDLOADER_CACHE_DIR (default
// $XDG_CACHE_HOME/seedloader, else ~/.cache/seedloader), bounded by
// $SEEDLOADER_CACHE_LIMIT bytes ("200G"; unset: no bound), its shards checked as
// $SEEDLOADER_CACHE_VERIFY says (stat, hash or none; unset: stat), each worker
// downloading $SEEDLOADER_PREFETCH_SHARDS shards ahead (unset: 4; 0: none).
// "mix:FILE" (or "mix:{...}", the same JSON inline) is a mixture
// (seedloader/mixture_dataset.h) of data sets named as above:
//   {"sources": {"web": "tar:s3://b/web", "curated": "imagefolder:/data/c"},
//    "weights": {"web": 3, "curated": 1}
//            or [[0, {"web": 3, "curated": 1}], [5000, {"web": 1, "curated": 1}]],
//    "samples_per_epoch": 100000,            (optional: the sum of the sizes)
//    "interpolate": false}                   (optional: linear ramps between points)
// the sources in the file's order, each with the same transform chain.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "seedloader/dataset.h"

namespace seedloader::tools {

// Opens the dataset `spec` names, with the transform chain `transform` (a
// transforms/spec.h string; empty for none). Throws ConfigError for an unknown
// kind or a bad argument, naming it, and DataError for unreadable data.
std::unique_ptr<Dataset> open_dataset(const std::string& spec,
                                      const std::string& transform);

// The kinds open_dataset accepts, for --help.
std::string data_spec_help();

// "1073741824", "64K", "64M", "1G", "2T" (powers of 1024), or nullopt for anything
// else, including sizes above 2^64 - 1.
std::optional<std::uint64_t> parse_byte_size(const std::string& text);

}  // namespace seedloader::tools
