// BatchSampler: groups one epoch's indices into batches of batch_size; the last,
// short batch is kept unless drop_last. Owns the epoch's index list.
#pragma once

#include <span>
#include <vector>

#include "seedloader/sampler.h"

namespace seedloader {

class BatchSampler {
 public:
  // Throws ConfigError when batch_size is 0.
  BatchSampler(std::vector<Index> indices, std::uint64_t batch_size, bool drop_last);

  std::uint64_t num_batches() const { return num_batches_; }
  // REQUIRES: k < num_batches().
  std::span<const Index> batch(std::uint64_t k) const;
  std::uint64_t batch_size() const { return batch_size_; }
  const std::vector<Index>& indices() const { return indices_; }

 private:
  std::vector<Index> indices_;
  std::uint64_t batch_size_;
  std::uint64_t num_batches_;
};

}  // namespace seedloader
