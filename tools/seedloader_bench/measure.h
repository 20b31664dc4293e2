// What seedloader-bench measures for one configuration, and the two ways it
// runs: through the host loop, or with every batch copied to a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "tools/common/loader_flags.h"

namespace seedloader::bench {

// data, transform, batch_size and workers come from LoaderFlags.
struct BenchArgs : tools::LoaderFlags {
  BenchArgs() { batch_size = 64; }
  std::uint64_t batches = 50;
  std::uint64_t warmup = 5;
  SeedScope seeding = SeedScope::kWorker;
  std::uint64_t seed = 0;
  bool device = false;
  bool json = false;
};

struct Measurement {
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;
  std::vector<double> worker_busy;      // fraction of the timed interval, per worker
  std::uint64_t peak_memory_bytes = 0;  // main RSS + workers' PSS, sampled per batch
  // --device only: H2D rate of the prefetcher and of a plain pinned cudaMemcpyAsync
  // of the same batch size, in bytes/s.
  double device_bytes_per_s = 0;
  double pinned_memcpy_bytes_per_s = 0;
};

// Samples the main process's RSS plus every worker's PSS; keeps the maximum.
class PeakMemory {
 public:
  void sample(const DataLoader& loader);
  std::uint64_t peak() const { return peak_; }

 private:
  std::uint64_t peak_ = 0;
};

// Iterates `warmup` untimed then `batches` timed batches, across epochs as needed.
Measurement measure_host(DataLoader& loader, const BenchArgs& args);
// As measure_host, with each batch copied to GPU 0 through DevicePrefetcher.
// Throws ConfigError when built without CUDA or when no GPU is present.
Measurement measure_device(DataLoader& loader, const BenchArgs& args);

}  // namespace seedloader::bench
