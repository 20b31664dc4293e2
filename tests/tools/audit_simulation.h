// Test helper: the per-sample records a data-parallel loader would produce, for a
// simulated world (ranks x workers x epochs) under a seeding mode, with batch k of
// an epoch going to worker k % W and each sample's fingerprint taken when it starts.
#pragma once

#include <vector>

#include "seedloader/batch_sampler.h"
#include "seedloader/derive.h"
#include "seedloader/distributed_sampler.h"
#include "tools/seed_audit/audit_types.h"
#include "tools/seed_audit/seeding_mode.h"

namespace seedloader::audit {

struct World {
  std::uint64_t size = 103;
  std::uint64_t ranks = 2;
  std::uint64_t workers = 3;
  std::uint64_t batch = 4;
  std::uint64_t epochs = 3;
  std::uint64_t seed = 7;
  bool shuffle = true;
  bool distributed = true;  // false: every rank reads the whole (shuffled) dataset
  bool set_epoch = true;    // false: the sampler's epoch stays 0
  bool draws_vary = false;  // samples consume 1..3 draws instead of 3
  SeedingMode mode = SeedingMode::kFull;
};

inline std::vector<SampleRecord> simulate(const World& w) {
  std::vector<SampleRecord> out;
  for (std::uint64_t rank = 0; rank < w.ranks; ++rank) {
    for (std::uint64_t epoch = 0; epoch < w.epochs; ++epoch) {
      DistributedOptions opts{.world_size = w.distributed ? w.ranks : 1,
                              .rank = w.distributed ? rank : 0,
                              .shuffle = w.shuffle,
                              .seed = w.seed};
      DistributedSampler sampler(w.size, opts);
      BatchSampler batches(sampler.indices(w.set_epoch ? epoch : 0), w.batch, false);
      std::vector<Rng> streams;
      for (std::uint64_t k = 0; k < w.workers; ++k) {
        streams.push_back(seeded_worker_rng(w.mode, w.seed, epoch, rank, k));
      }
      for (std::uint64_t b = 0; b < batches.num_batches(); ++b) {
        std::uint64_t worker = b % w.workers;
        for (Index i : batches.batch(b)) {
          Rng own = sample_stream(w.seed, epoch, i);
          Rng& rng = draws_per_sample(w.mode) ? own : streams[worker];
          SampleRecord r;
          r.rank = static_cast<std::uint32_t>(rank);
          r.epoch = static_cast<std::uint32_t>(epoch);
          r.worker = static_cast<std::uint32_t>(worker);
          r.batch = b;
          r.index = i;
          r.rng = rng.fingerprint();
          for (std::uint64_t d = 0, n = w.draws_vary ? i % 3 + 1 : 3; d < n; ++d) {
            rng.next_u64();
          }
          out.push_back(r);
        }
      }
    }
  }
  return out;
}

}  // namespace seedloader::audit
