// streams_demo: the worker streams and the sharded epoch a small run would use.
// Prints, for 2 ranks x 2 workers, each worker's spawn key and first draws, then
// each rank's shard of a 10-sample dataset for two epochs.
#include <cinttypes>
#include <cstdio>

#include "seedloader/derive.h"
#include "seedloader/distributed_sampler.h"

int main(int argc, char** argv) {
  using namespace seedloader;
  const std::uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1234;
  std::printf("base seed %" PRIu64
              "\n\nworker streams, epoch 0 (spawn key (1, epoch, rank, worker)):\n",
              seed);
  for (std::uint64_t rank = 0; rank < 2; ++rank) {
    for (std::uint64_t worker = 0; worker < 2; ++worker) {
      Rng rng = worker_stream(seed, 0, rank, worker);
      std::printf("  rank %" PRIu64 " worker %" PRIu64 ":", rank, worker);
      for (int i = 0; i < 3; ++i) std::printf(" %016" PRIx64, rng.next_u64());
      std::printf("\n");
    }
  }
  std::printf("\nshards of a 10-sample dataset, 2 ranks, shuffled:\n");
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    for (std::uint64_t rank = 0; rank < 2; ++rank) {
      DistributedSampler sampler(
          10, {.world_size = 2, .rank = rank, .shuffle = true, .seed = seed});
      std::printf("  epoch %" PRIu64 " rank %" PRIu64 ":", epoch, rank);
      for (Index i : sampler.indices(epoch)) std::printf(" %" PRIu64, i);
      std::printf("\n");
    }
  }
  return 0;
}
