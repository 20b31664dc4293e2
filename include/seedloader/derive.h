// Seed derivation: every random stream in seedloader is a pure function of the
// base seed and a spawn key whose first element tags its purpose, so streams of
// different purposes can never collide:
//   sampler shuffle   (0, epoch)
//   worker stream     (1, epoch, rank, worker)
//   per-sample stream (2, epoch, sample_index)
//   batch stream      (3, epoch, rank, batch_index)  (MixUp / CutMix)
//   mixture source order    (4, source_key, source_epoch)  (mixture.h)
//   mixture batch order     (5, global_step)
//   mixture sample stream   (6, source_key, source_epoch, index_in_source)
// In numpy: PCG64(SeedSequence(base, spawn_key=KEY)) gives the same stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seedloader/pcg64_stream.h"

namespace seedloader {

enum class StreamPurpose : std::uint64_t {
  kShuffle = 0,
  kWorker = 1,
  kSample = 2,
  kBatch = 3,
  kMixtureOrder = 4,
  kMixtureBatch = 5,
  kMixtureSample = 6
};

std::vector<std::uint64_t> shuffle_key(std::uint64_t epoch);
std::vector<std::uint64_t> worker_key(std::uint64_t epoch, std::uint64_t rank,
                                      std::uint64_t worker);
std::vector<std::uint64_t> sample_key(std::uint64_t epoch, std::uint64_t index);
std::vector<std::uint64_t> batch_key(std::uint64_t epoch, std::uint64_t rank,
                                     std::uint64_t batch);
std::vector<std::uint64_t> mixture_sample_key(std::uint64_t source_key,
                                              std::uint64_t source_epoch,
                                              std::uint64_t index);

Pcg64Stream shuffle_stream(std::uint64_t base_seed, std::uint64_t epoch);
Pcg64Stream worker_stream(std::uint64_t base_seed, std::uint64_t epoch,
                          std::uint64_t rank, std::uint64_t worker);
Pcg64Stream sample_stream(std::uint64_t base_seed, std::uint64_t epoch,
                          std::uint64_t index);
// A mixture's per-sample stream (mixture.h): keyed by the source, not by the
// sample's place in the loader, so its draws do not depend on the weights.
Pcg64Stream mixture_sample_stream(std::uint64_t base_seed, std::uint64_t source_key,
                                  std::uint64_t source_epoch, std::uint64_t index);
Pcg64Stream batch_stream(std::uint64_t base_seed, std::uint64_t epoch, std::uint64_t rank,
                         std::uint64_t batch);
Pcg64Stream stream_for_key(std::uint64_t base_seed,
                           const std::vector<std::uint64_t>& key);

// A base seed the user did not give: drawn once from the OS (getrandom) and
// announced on stderr as "<who>: no seed given; using base seed N" so the run can
// be repeated. Callers record it in their reports and checkpoints.
std::uint64_t draw_base_seed(const std::string& who);

}  // namespace seedloader
