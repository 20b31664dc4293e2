// DistributedSampler: the shard of the dataset one rank visits, with exactly
// PyTorch's semantics (torch.utils.data.DistributedSampler):
//   num_samples = ceil((N - R) / R) when drop_last and N % R != 0, else ceil(N / R)
//   total_size  = num_samples * R
//   padding repeats indices from the start (the whole list as often as needed);
//   drop_last truncates instead; rank r takes indices[r : total_size : R].
// With shuffle on, the permutation is epoch_permutation(N, seed, epoch, order),
// identical on every rank, so shards are disjoint apart from documented padding;
// with order kTorch the shard equals PyTorch's, index for index.
// Immutable after construction apart from the epoch set by set_epoch().
#pragma once

#include <memory>

#include "seedloader/sampler.h"

namespace seedloader {

struct DistributedOptions {
  std::uint64_t world_size = 1;
  std::uint64_t rank = 0;
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool drop_last = false;
  ShuffleOrder order = ShuffleOrder::kNumpy;
  std::shared_ptr<const ShardBlocks> shards;  // for ShuffleOrder::kShards
};

class DistributedSampler : public Sampler {
 public:
  // Throws ConfigError for world_size 0, rank >= world_size, or a dataset too
  // small to give every rank a sample with drop_last.
  DistributedSampler(std::uint64_t dataset_size, DistributedOptions options);

  std::uint64_t size() const override { return num_samples_; }
  std::uint64_t total_size() const { return num_samples_ * options_.world_size; }
  std::vector<Index> indices(std::uint64_t epoch) const override;

  // PyTorch-style stateful use: set_epoch(e) then indices().
  void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
  std::vector<Index> indices() const { return indices(epoch_); }

  const DistributedOptions& options() const { return options_; }

 private:
  std::uint64_t dataset_size_;
  DistributedOptions options_;
  std::uint64_t num_samples_;
  std::uint64_t epoch_ = 0;
};

}  // namespace seedloader
