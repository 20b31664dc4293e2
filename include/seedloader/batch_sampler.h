// BatchSampler: groups one epoch's indices into batches of batch_size; the last,
// short batch is kept unless drop_last. Or holds batches given whole (a user's
// batch sampler), of any sizes. Owns the epoch's index list.
#pragma once

#include <span>
#include <vector>

#include "seedloader/sampler.h"

namespace seedloader {

class BatchSampler {
 public:
  // Throws ConfigError when batch_size is 0.
  BatchSampler(std::vector<Index> indices, std::uint64_t batch_size, bool drop_last);
  // The batches as given. batch_size() is then the largest one's size.
  explicit BatchSampler(const std::vector<std::vector<Index>>& batches);

  std::uint64_t num_batches() const { return num_batches_; }
  // REQUIRES: k < num_batches().
  std::span<const Index> batch(std::uint64_t k) const;
  std::uint64_t batch_size() const { return batch_size_; }
  const std::vector<Index>& indices() const { return indices_; }

 private:
  std::vector<Index> indices_;
  std::uint64_t batch_size_;
  std::uint64_t num_batches_;
  // Given batches: batch k is indices_[starts_[k], starts_[k + 1]). Empty when
  // the batches are batch_size runs of indices_.
  std::vector<std::uint64_t> starts_;
};

}  // namespace seedloader
