// The rate the loader is judged against: full-size JPEG decodes per second on
// the calling thread, with the loader's own decoder (libturbojpeg through
// decode_image, as ImageFolder::get calls it) and no file reads, transforms or
// copies. One loader worker cannot beat it by much, so samples/s per worker over
// this rate says how close the pipeline runs to the decoder's ceiling.
#pragma once

#include <cstdint>

#include "seedloader/dataset.h"

namespace seedloader::bench {

struct DecodeReference {
  std::uint64_t images = 0;  // distinct JPEGs decoded
  double per_s = 0;          // full-size decodes per second
};

// Reads the first `count` JPEG files of `dataset` in its sample order into
// memory, then decodes them at full size to RGB round after round for at least
// `min_seconds` (a whole number of rounds). Throws ConfigError when `dataset` is
// not an ImageFolder or holds no JPEG, DataError for a file it cannot read or
// decode. REQUIRES: count > 0.
DecodeReference measure_decode_reference(const Dataset& dataset, std::uint64_t count,
                                         double min_seconds = 1.0);

}  // namespace seedloader::bench
