// ElasticSampler: the shard of an epoch one rank visits when the global batch, not
// the rank's share of the data set, is what must stay fixed. With global batch size
// G = batch_size x world_size:
//   the epoch's order is one permutation of the whole data set (or 0..N-1 without
//   shuffle), epoch_permutation(N, seed, epoch, order), the same at every world size;
//   it is padded to a multiple of G by repeating from its start (the whole list as
//   often as needed), as DistributedSampler pads, or truncated to one with drop_last;
//   global batch g is positions [gG, (g+1)G) of that list, and rank r takes
//   [gG + r*b, gG + (r+1)*b).
// So global batch g holds the same indices, in the same order, for every world size
// dividing G: a run can stop at one world size and continue at another.
// With canonical_nodes C (a divisor of G), the padded list is cut into C contiguous
// parts of equal length and global batch g is, part after part, the g-th run of
// G/C positions of each part. Ranks numbered node by node on N physical nodes (N
// dividing C) then read, node n, only parts [nC/N, (n+1)C/N): a contiguous stretch
// of the epoch's order. Under ShuffleOrder::kShards the order is then
// shard_part_permutation(): the shuffled shards cut into the parts before the
// blocks are shuffled, within each part, so a node reads only its own shards (and
// the two it shares at each end). The global batches stay the same for every world
// size dividing G; a node must cache about C/N shuffle blocks at once.
// Immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "seedloader/sampler.h"

namespace seedloader {

struct ElasticOptions {
  std::uint64_t world_size = 1;
  std::uint64_t rank = 0;
  std::uint64_t batch_size = 1;  // per rank: G = batch_size x world_size
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;
  ShuffleOrder order = ShuffleOrder::kNumpy;
  std::shared_ptr<const ShardBlocks> shards;  // for ShuffleOrder::kShards
  std::uint64_t canonical_nodes = 0;          // 0: no split into parts
};

class ElasticSampler : public Sampler {
 public:
  // Throws ConfigError for world_size or batch_size 0, rank >= world_size, a data
  // set smaller than one global batch with drop_last, or canonical_nodes that do
  // not divide G.
  ElasticSampler(std::uint64_t dataset_size, ElasticOptions options);

  // Indices this rank visits per epoch: num_batches() x batch_size.
  std::uint64_t size() const override { return num_batches_ * options_.batch_size; }
  std::uint64_t global_batch_size() const { return global_; }
  std::uint64_t num_batches() const { return num_batches_; }
  // This rank's indices, batch after batch.
  std::vector<Index> indices(std::uint64_t epoch) const override;
  // The whole epoch's list, padded or truncated: num_batches() x G indices.
  std::vector<Index> global_indices(std::uint64_t epoch) const;
  // For each of this rank's batches, the index at the global position just before
  // the rank's first (the global batch's last for rank 0): the sample a batch mix
  // pairs with the rank's first sample, as it would in the whole global batch.
  std::vector<Index> preceding(std::uint64_t epoch) const;
  EpochOrder partners(std::uint64_t epoch) const override {
    return {preceding(epoch), {}};
  }

  const ElasticOptions& options() const { return options_; }

 private:
  std::uint64_t dataset_size_;
  ElasticOptions options_;
  std::uint64_t global_;
  std::uint64_t num_batches_;
};

}  // namespace seedloader
