#include "tools/seed_audit/seeding_mode.h"

#include "seedloader/derive.h"

namespace seedloader::audit {

const char* seeding_mode_name(SeedingMode mode) {
  switch (mode) {
    case SeedingMode::kFull:
      return "full";
    case SeedingMode::kSample:
      return "sample";
    case SeedingMode::kTorch:
      return "torch";
    case SeedingMode::kNaive:
      return "naive";
  }
  return "unknown";
}

Rng seeded_worker_rng(SeedingMode mode, std::uint64_t base_seed, std::uint64_t epoch,
                      std::uint64_t rank, std::uint64_t worker) {
  switch (mode) {
    case SeedingMode::kFull:
    case SeedingMode::kSample:
      return worker_stream(base_seed, epoch, rank, worker);
    case SeedingMode::kTorch: {
      // The main process's generator, seeded alike on every rank, yields one base
      // per epoch (each DataLoader iterator draws one); workers add their id.
      Rng parent{SeedSequence(base_seed)};
      parent.advance(epoch);
      return Rng(SeedSequence(parent.next_u64() + worker));
    }
    case SeedingMode::kNaive:
      return Rng(SeedSequence(base_seed));
  }
  return worker_stream(base_seed, epoch, rank, worker);
}

}  // namespace seedloader::audit
