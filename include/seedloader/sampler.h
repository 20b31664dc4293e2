// Sampler: the order in which one rank visits dataset indices in an epoch. Every
// sampler is a pure function of (dataset size, seed, epoch, rank, world size):
// indices(epoch) returns the same list on every call and every machine.
// Immutable after construction, so safe to share across threads and fork.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace seedloader {

using Index = std::uint64_t;

// One epoch's order: the indices, and the epoch each one's per-sample stream is
// keyed by, in the same order (empty: the epoch itself, for every index).
struct EpochOrder {
  std::vector<Index> indices;
  std::vector<std::uint64_t> stream_epochs;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Number of indices indices(epoch) returns (the same for every epoch).
  virtual std::uint64_t size() const = 0;
  virtual std::vector<Index> indices(std::uint64_t epoch) const = 0;
  // The indices with the epochs their streams are keyed by. A sampler whose
  // samples belong to epochs of their own (a mixture's sources) overrides it.
  virtual EpochOrder order(std::uint64_t epoch) const { return {indices(epoch), {}}; }
  // For a sampler whose batches are one rank's slices of global batches (the
  // elastic partition, a mixture): for each of the rank's batches of `epoch`, the
  // sample at the global position just before the rank's first (the global
  // batch's last for rank 0), with its stream's epoch — the partner a batch mix
  // gives the rank's first row, as it would in the whole global batch. Any other
  // sampler throws std::logic_error.
  virtual EpochOrder partners(std::uint64_t epoch) const;
};

// 0, 1, ..., n-1 in every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(std::uint64_t n) : n_(n) {}
  std::uint64_t size() const override { return n_; }
  std::vector<Index> indices(std::uint64_t epoch) const override;

 private:
  std::uint64_t n_;
};

// Which generator shuffles an epoch.
//  kNumpy (the default): the shuffle stream (0, epoch) of the seed's PCG64
//    family, numpy's Generator(PCG64(SeedSequence(seed, spawn_key=(0, epoch))))
//    .permutation(n); independent of every other stream, and reproducible in
//    numpy alone.
//  kTorch: PyTorch's DistributedSampler(shuffle=True, seed=seed) after
//    set_epoch(epoch), torch.randperm(n, generator=Generator().manual_seed(seed +
//    epoch)): for comparing with, or continuing, a PyTorch run. torch's CPU
//    generator keeps only the low 32 bits of a seed (and 1.13's randperm draws
//    32-bit numbers), so seeds that agree there give the same order.
//  kShards: an order that reads shards whole, for data sets stored in shards
//    (TarShards) and fetched through a bounded cache. From the same shuffle
//    stream, shard_block_permutation() below: the shards in a shuffled order,
//    their samples cut into blocks, each block shuffled. A rank then reads a
//    bounded number of shards at a time instead of every shard in every batch.
enum class ShuffleOrder { kNumpy, kTorch, kShards };

// What ShuffleOrder::kShards keeps together: the sample count of each shard in
// index order (shard 0 holds indices [0, sizes[0]), shard 1 the next sizes[1],
// ...) and the block size in samples (at least 1).
struct ShardBlocks {
  std::vector<std::uint64_t> shard_sizes;
  std::uint64_t block = 1;
};

// The shard order of `epoch`, drawn from the shuffle stream (0, epoch) as numpy
// draws it from g = Generator(PCG64(SeedSequence(seed, spawn_key=(0, epoch)))):
//   shards = g.permutation(len(sizes))
//   order  = concatenate(the index range of each shard, in that order)
//   for each block [j*block, (j+1)*block) of order: g.shuffle(order[block range])
// Throws ConfigError when the sizes do not sum to n or the block is 0.
std::vector<Index> shard_block_permutation(std::uint64_t n, const ShardBlocks& shards,
                                           std::uint64_t seed, std::uint64_t epoch);

// The order ElasticSampler cuts into canonical nodes' parts under kShards: the
// shards in the order the generator above shuffles them, their samples
// concatenated, repeated from the start up to `total` positions (or truncated to
// them), cut into `parts` equal parts, and each part's samples shuffled in blocks
// of `shards.block` from the part's start, part after part, by the same generator.
// A part then holds whole shards but the two at its ends, so a node that reads
// only its parts downloads about its share. Throws ConfigError when `parts` does
// not divide `total`, or as shard_block_permutation.
std::vector<Index> shard_part_permutation(std::uint64_t n, const ShardBlocks& shards,
                                          std::uint64_t seed, std::uint64_t epoch,
                                          std::uint64_t parts, std::uint64_t total);

// A permutation of 0..n-1 for `epoch`, drawn as `order` says (`shards` is read
// by kShards only, and must then be set).
class RandomSampler : public Sampler {
 public:
  RandomSampler(std::uint64_t n, std::uint64_t seed,
                ShuffleOrder order = ShuffleOrder::kNumpy,
                std::shared_ptr<const ShardBlocks> shards = nullptr);
  std::uint64_t size() const override { return n_; }
  std::vector<Index> indices(std::uint64_t epoch) const override;

 private:
  std::uint64_t n_;
  std::uint64_t seed_;
  ShuffleOrder order_;
  std::shared_ptr<const ShardBlocks> shards_;
};

// The permutation RandomSampler uses; shared with DistributedSampler and
// ElasticSampler. kShards needs `shards` (else ConfigError).
std::vector<Index> epoch_permutation(std::uint64_t n, std::uint64_t seed,
                                     std::uint64_t epoch,
                                     ShuffleOrder order = ShuffleOrder::kNumpy,
                                     const ShardBlocks* shards = nullptr);

// torch.randperm(n, generator=torch.Generator().manual_seed(seed)) on the CPU,
// as torch 1.13 computes it: mt19937 seeded with seed's low 32 bits, then
// for i in [0, n-1): swap(r[i], r[i + next32() % (n - i)]).
std::vector<Index> torch_randperm(std::uint64_t n, std::uint64_t seed);

}  // namespace seedloader
