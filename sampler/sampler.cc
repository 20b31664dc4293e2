#include "seedloader/sampler.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {

EpochOrder Sampler::partners(std::uint64_t) const {
  throw std::logic_error("Sampler::partners: this sampler has no global batches");
}

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

namespace {

// The shards of `shards` in the order `rng` shuffles them, their samples
// concatenated (unshuffled within).
std::vector<Index> shard_sequence(std::uint64_t n, const ShardBlocks& shards, Rng& rng) {
  if (shards.block == 0) throw ConfigError("shuffle_block must be at least 1 sample");
  const std::vector<std::uint64_t>& sizes = shards.shard_sizes;
  std::vector<std::uint64_t> first(sizes.size());
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    first[s] = total;
    total += sizes[s];
  }
  if (total != n) {
    throw ConfigError("order shards: the shards hold " + std::to_string(total) +
                      " samples in all, but the data set has " + std::to_string(n));
  }
  std::vector<Index> shard_order(sizes.size());
  std::iota(shard_order.begin(), shard_order.end(), Index{0});
  shuffle(rng, std::span<Index>(shard_order));
  std::vector<Index> out;
  out.reserve(n);
  for (const Index s : shard_order) {
    for (std::uint64_t i = 0; i < sizes[s]; ++i) out.push_back(first[s] + i);
  }
  return out;
}

// Shuffles [start, end) of `out` in blocks of `block` from `start`.
void shuffle_blocks(Rng& rng, std::vector<Index>& out, std::uint64_t start,
                    std::uint64_t end, std::uint64_t block) {
  for (; start < end; start += block) {
    const std::uint64_t count = std::min(block, end - start);
    shuffle(rng, std::span<Index>(out).subspan(start, count));
  }
}

}  // namespace

std::vector<Index> shard_block_permutation(std::uint64_t n, const ShardBlocks& shards,
                                           std::uint64_t seed, std::uint64_t epoch) {
  Rng rng = shuffle_stream(seed, epoch);
  std::vector<Index> out = shard_sequence(n, shards, rng);
  shuffle_blocks(rng, out, 0, n, shards.block);
  return out;
}

std::vector<Index> shard_part_permutation(std::uint64_t n, const ShardBlocks& shards,
                                          std::uint64_t seed, std::uint64_t epoch,
                                          std::uint64_t parts, std::uint64_t total) {
  if (parts == 0 || total % parts != 0)
    throw ConfigError("order shards: " + std::to_string(total) +
                      " positions do not cut into " + std::to_string(parts) + " parts");
  Rng rng = shuffle_stream(seed, epoch);
  std::vector<Index> out = shard_sequence(n, shards, rng);
  if (total <= n) {
    out.resize(total);
  } else {
    out.reserve(total);
    for (std::uint64_t pos = n; pos < total; ++pos) out.push_back(out[pos % n]);
  }
  const std::uint64_t part = total / parts;
  for (std::uint64_t c = 0; c < parts; ++c)
    shuffle_blocks(rng, out, c * part, (c + 1) * part, shards.block);
  return out;
}

std::vector<Index> epoch_permutation(std::uint64_t n, std::uint64_t seed,
                                     std::uint64_t epoch, ShuffleOrder order,
                                     const ShardBlocks* shards) {
  // Python adds seed and epoch as integers; only the low 32 bits reach torch's
  // generator, and those wrap alike.
  if (order == ShuffleOrder::kTorch) return torch_randperm(n, seed + epoch);
  if (order == ShuffleOrder::kShards) {
    if (shards == nullptr) {
      throw ConfigError(
          "order shards needs the data set's shards (a TarShards data set); this "
          "one is not stored in shards");
    }
    return shard_block_permutation(n, *shards, seed, epoch);
  }
  std::vector<Index> out(n);
  std::iota(out.begin(), out.end(), Index{0});
  Rng rng = shuffle_stream(seed, epoch);
  shuffle(rng, std::span<Index>(out));
  return out;
}

RandomSampler::RandomSampler(std::uint64_t n, std::uint64_t seed, ShuffleOrder order,
                             std::shared_ptr<const ShardBlocks> shards)
    : n_(n), seed_(seed), order_(order), shards_(std::move(shards)) {}

std::vector<Index> RandomSampler::indices(std::uint64_t epoch) const {
  return epoch_permutation(n_, seed_, epoch, order_, shards_.get());
}

}  // namespace seedloader
