// Seeding modes: how each worker's random stream is made. `full` and `sample` are
// seedloader's (seedloader/derive.h); `torch` and `naive` imitate broken or weaker
// schemes so the audit can be shown and tested against them:
//   full   worker stream (1, epoch, rank, worker): distinct everywhere
//   sample a fresh stream per sample (2, epoch, index)
//   torch  PyTorch's scheme: seed = base_e + worker, where base_e is the epoch's
//          draw from a generator seeded identically on every rank (rank not mixed in)
//   naive  every worker starts from the parent's state (the fork bug): the same
//          stream for every worker, epoch and rank
// Pure functions of their arguments.
#pragma once

#include <cstdint>

#include "seedloader/pcg64_stream.h"

namespace seedloader::audit {

enum class SeedingMode { kFull, kSample, kTorch, kNaive };

// "full", "sample", "torch" or "naive" (seed-audit run's --seeding names).
const char* seeding_mode_name(SeedingMode mode);

// The stream worker `worker` of `rank` starts epoch `epoch` with.
Rng seeded_worker_rng(SeedingMode mode, std::uint64_t base_seed, std::uint64_t epoch,
                      std::uint64_t rank, std::uint64_t worker);

// In sample mode every sample draws from sample_stream(base, epoch, index) (rng/
// derive.h) instead of its worker's stream.
inline bool draws_per_sample(SeedingMode mode) { return mode == SeedingMode::kSample; }

}  // namespace seedloader::audit
