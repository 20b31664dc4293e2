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
  Partition partition = Partition::kStrided;
  ShuffleOrder order = ShuffleOrder::kNumpy;
  std::uint64_t shuffle_block = 0;
  std::uint64_t world_size = 1;  // measured as rank `rank` of this many
  std::uint64_t rank = 0;
  std::uint64_t seed = 0;
  bool device = false;
  bool json = false;
  std::uint64_t decode_reference = 0;  // JPEGs to decode once for the reference; 0: off
};

struct Measurement {
  std::uint64_t batches = 0;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;
  // From the start of the first epoch (forking the workers) to its first batch,
  // warm-up included: what a cold start costs before the timed rate applies.
  double first_batch_seconds = 0;
  std::vector<double> worker_busy;      // fraction of the timed interval, per worker
  std::uint64_t peak_memory_bytes = 0;  // main RSS + workers' PSS, see PeakMemory
  // CPU time of the consuming thread over the timed loop (CLOCK_THREAD_CPUTIME_ID):
  // what the main process spends per batch. Workers are other processes and the
  // memory sampler another thread, so neither is in it.
  double main_cpu_seconds = 0;
  // --device only: H2D rate of the prefetcher and of a plain pinned cudaMemcpyAsync
  // of the same batch size, in bytes/s.
  double device_bytes_per_s = 0;
  double pinned_memcpy_bytes_per_s = 0;
  // tar: over a URL: downloads ahead of the reads that failed (every worker's),
  // and the first one's message.
  std::uint64_t prefetch_errors = 0;
  std::string first_prefetch_error;
};

// CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

// Iterates `warmup` untimed then `batches` timed batches, across epochs as needed.
Measurement measure_host(DataLoader& loader, const BenchArgs& args);
// As measure_host, with each batch copied to GPU 0 through DevicePrefetcher.
// Throws ConfigError when built without CUDA or when no GPU is present.
Measurement measure_device(DataLoader& loader, const BenchArgs& args);

}  // namespace seedloader::bench
