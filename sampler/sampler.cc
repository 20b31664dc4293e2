#include "seedloader/sampler.h"

#include <numeric>
#include <random>
#include <span>
#include <utility>

#include "seedloader/derive.h"
#include "seedloader/random.h"

namespace seedloader {

std::vector<Index> SequentialSampler::indices(std::uint64_t) const {
  std::vector<Index> out(n_);
  std::iota(out.begin(), out.end(), Index{0});
  return out;
}

std::vector<Index> torch_randperm(std::uint64_t n, std::uint64_t seed) {
  std::vector<Index> out(n);
  std::iota(out.begin(), out.end(), Index{0});
  // std::mt19937's seeding is the reference init_genrand that torch's
  // at::mt19937 also runs on the seed's low 32 bits.
  std::mt19937 gen(static_cast<std::uint32_t>(seed));
  for (std::uint64_t i = 0; i + 1 < n; ++i) {
    const std::uint64_t z = gen() % (n - i);
    std::swap(out[i], out[i + z]);
  }
  return out;
}

std::vector<Index> epoch_permutation(std::uint64_t n, std::uint64_t seed,
                                     std::uint64_t epoch, ShuffleOrder order) {
  // Python adds seed and epoch as integers; only the low 32 bits reach torch's
  // generator, and those wrap alike.
  if (order == ShuffleOrder::kTorch) return torch_randperm(n, seed + epoch);
  std::vector<Index> out(n);
  std::iota(out.begin(), out.end(), Index{0});
  Rng rng = shuffle_stream(seed, epoch);
  shuffle(rng, std::span<Index>(out));
  return out;
}

std::vector<Index> RandomSampler::indices(std::uint64_t epoch) const {
  return epoch_permutation(n_, seed_, epoch, order_);
}

}  // namespace seedloader
