// measure_device without CUDA: the build has no GPU path to measure.
#include "tools/seedloader_bench/measure.h"

namespace seedloader::bench {

Measurement measure_device(DataLoader&, const BenchArgs&) {
  throw ConfigError(
      "--device: this build has no CUDA (configure with "
      "-DSEEDLOADER_WITH_CUDA=ON where nvcc is available)");
}

}  // namespace seedloader::bench
