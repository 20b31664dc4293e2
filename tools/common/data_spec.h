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
// the sources in the file's order, each with the same transform chain; no other
// key. A mix: file is at most kMaxJsonFileBytes (input_file.h), a regular file,
// and its JSON (inline too) nests at most kMaxJsonDepth deep (base/json_depth.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <string_view>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/mixture.h"

namespace seedloader::tools {

// Opens the dataset `spec` names, with the transform chain `transform` (a
// transforms/spec.h string; empty for none). Throws ConfigError for an unknown
// kind or a bad argument, naming it, and DataError for unreadable data.
std::unique_ptr<Dataset> open_dataset(const std::string& spec,
                                      const std::string& transform);

// The transform chain open_dataset_for_order gives every source: an exact resize,
// which fixes the image size that imagefolder: and tar: need a chain to fix.
inline constexpr const char* kOrderTransform = "resize:32x32";

// The data set `spec` names, opened for what an order needs of it: its size, its
// shards and, for a mixture, its sources' sizes and its weights. An order does not
// depend on pixels, and nothing is decoded here, so every source is opened with
// kOrderTransform: imagefolder:, tar: and mix: of them need no --transform.
// Throws as open_dataset.
std::unique_ptr<Dataset> open_dataset_for_order(const std::string& spec);

// A mix: spec's JSON, parsed and checked but nothing opened.
struct MixSpec {
  std::vector<std::string> names;    // in the spec's order
  std::vector<std::string> sources;  // each one's data spec
  std::vector<WeightPoint> points;   // the weights in names' order, by step
  bool interpolate = false;
  std::optional<std::uint64_t> samples_per_epoch;
};

// `text` as a mix: spec. Throws ConfigError starting with `where` (the flag and its
// value): not JSON, nested deeper than kMaxJsonDepth, a key other than sources,
// weights, samples_per_epoch and interpolate (naming it and those), a source that
// is not a data spec string or is a mixture, a weight missing, unknown or not a
// number, a malformed schedule point, or samples_per_epoch not an integer in
// [1, 2^64). The schedule's own checks are MixtureSchedule's.
MixSpec parse_mix_spec(const std::string& where, std::string_view text);

// The kinds open_dataset accepts, for --help.
std::string data_spec_help();

// "1073741824", "64K", "64M", "1G", "2T" (powers of 1024), or nullopt for anything
// else, including sizes above 2^64 - 1.
std::optional<std::uint64_t> parse_byte_size(const std::string& text);

}  // namespace seedloader::tools
