#include "seedloader/derive.h"

#include <sys/random.h>

#include <cstdio>

#include "base/check.h"

namespace seedloader {

std::vector<std::uint64_t> shuffle_key(std::uint64_t epoch) {
  return {static_cast<std::uint64_t>(StreamPurpose::kShuffle), epoch};
}

std::vector<std::uint64_t> worker_key(std::uint64_t epoch, std::uint64_t rank,
                                      std::uint64_t worker) {
  return {static_cast<std::uint64_t>(StreamPurpose::kWorker), epoch, rank, worker};
}

std::vector<std::uint64_t> sample_key(std::uint64_t epoch, std::uint64_t index) {
  return {static_cast<std::uint64_t>(StreamPurpose::kSample), epoch, index};
}

std::vector<std::uint64_t> batch_key(std::uint64_t epoch, std::uint64_t rank,
                                     std::uint64_t batch) {
  return {static_cast<std::uint64_t>(StreamPurpose::kBatch), epoch, rank, batch};
}

std::vector<std::uint64_t> mixture_sample_key(std::uint64_t source_key,
                                              std::uint64_t source_epoch,
                                              std::uint64_t index) {
  return {static_cast<std::uint64_t>(StreamPurpose::kMixtureSample), source_key,
          source_epoch, index};
}

Pcg64Stream stream_for_key(std::uint64_t base_seed,
                           const std::vector<std::uint64_t>& key) {
  return Pcg64Stream(SeedSequence(base_seed, key));
}

Pcg64Stream shuffle_stream(std::uint64_t base_seed, std::uint64_t epoch) {
  return stream_for_key(base_seed, shuffle_key(epoch));
}

Pcg64Stream worker_stream(std::uint64_t base_seed, std::uint64_t epoch,
                          std::uint64_t rank, std::uint64_t worker) {
  return stream_for_key(base_seed, worker_key(epoch, rank, worker));
}

Pcg64Stream sample_stream(std::uint64_t base_seed, std::uint64_t epoch,
                          std::uint64_t index) {
  return stream_for_key(base_seed, sample_key(epoch, index));
}

Pcg64Stream mixture_sample_stream(std::uint64_t base_seed, std::uint64_t source_key,
                                  std::uint64_t source_epoch, std::uint64_t index) {
  return stream_for_key(base_seed, mixture_sample_key(source_key, source_epoch, index));
}

Pcg64Stream batch_stream(std::uint64_t base_seed, std::uint64_t epoch, std::uint64_t rank,
                         std::uint64_t batch) {
  return stream_for_key(base_seed, batch_key(epoch, rank, batch));
}

std::uint64_t draw_base_seed(const std::string& who) {
  std::uint64_t seed = 0;
  std::size_t got = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(&seed);
  while (got < sizeof(seed)) {
    ssize_t n = SL_CHECK_SYS(getrandom(bytes + got, sizeof(seed) - got, 0));
    got += static_cast<std::size_t>(n);
  }
  // numpy seeds are non-negative Python ints; keep the seed below 2^63 so it also
  // fits a signed 64-bit field in JSON and safetensors metadata readers.
  seed >>= 1;
  std::fprintf(stderr, "%s: no seed given; using base seed %llu\n", who.c_str(),
               static_cast<unsigned long long>(seed));
  return seed;
}

}  // namespace seedloader
