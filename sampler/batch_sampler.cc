#include "seedloader/batch_sampler.h"

#include <algorithm>
#include <string>

#include "seedloader/error.h"

namespace seedloader {

std::uint64_t batches_per_epoch(const EpochBatching& e) {
  if (e.batch_size == 0) throw ConfigError("batches_per_epoch: batch_size is 0");
  const std::uint64_t whole = e.samples / e.batch_size;
  // Not (samples + batch_size - 1) / batch_size, which wraps near 2^64.
  return whole + (!e.drop_last && e.samples % e.batch_size != 0 ? 1 : 0);
}

BatchSampler::BatchSampler(std::vector<Index> indices, std::uint64_t batch_size,
                           bool drop_last)
    : indices_(std::move(indices)), batch_size_(batch_size) {
  if (batch_size_ == 0) throw ConfigError("BatchSampler: batch_size is 0");
  num_batches_ = batches_per_epoch(
      {.samples = indices_.size(), .batch_size = batch_size_, .drop_last = drop_last});
}

BatchSampler::BatchSampler(const std::vector<std::vector<Index>>& batches)
    : batch_size_(0), num_batches_(batches.size()) {
  starts_.reserve(batches.size() + 1);
  starts_.push_back(0);
  for (const std::vector<Index>& b : batches) {
    indices_.insert(indices_.end(), b.begin(), b.end());
    starts_.push_back(indices_.size());
    batch_size_ = std::max<std::uint64_t>(batch_size_, b.size());
  }
}

std::span<const Index> BatchSampler::batch(std::uint64_t k) const {
  if (!starts_.empty()) {
    return std::span<const Index>(indices_).subspan(starts_[k],
                                                    starts_[k + 1] - starts_[k]);
  }
  const std::uint64_t begin = k * batch_size_;
  const std::uint64_t end = std::min<std::uint64_t>(begin + batch_size_, indices_.size());
  return std::span<const Index>(indices_).subspan(begin, end - begin);
}

}  // namespace seedloader
