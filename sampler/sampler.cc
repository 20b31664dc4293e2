#include "seedloader/sampler.h"

#include <numeric>
#include <span>

#include "seedloader/derive.h"
#include "seedloader/random.h"

namespace seedloader {

std::vector<Index> SequentialSampler::indices(std::uint64_t) const {
  std::vector<Index> out(n_);
  std::iota(out.begin(), out.end(), Index{0});
  return out;
}

std::vector<Index> epoch_permutation(std::uint64_t n, std::uint64_t seed,
                                     std::uint64_t epoch) {
  std::vector<Index> out(n);
  std::iota(out.begin(), out.end(), Index{0});
  Rng rng = shuffle_stream(seed, epoch);
  shuffle(rng, std::span<Index>(out));
  return out;
}

std::vector<Index> RandomSampler::indices(std::uint64_t epoch) const {
  return epoch_permutation(n_, seed_, epoch);
}

}  // namespace seedloader
