#include "seedloader/batch_sampler.h"

#include <algorithm>
#include <string>

#include "seedloader/error.h"

namespace seedloader {

BatchSampler::BatchSampler(std::vector<Index> indices, std::uint64_t batch_size,
                           bool drop_last)
    : indices_(std::move(indices)), batch_size_(batch_size) {
  if (batch_size_ == 0) throw ConfigError("BatchSampler: batch_size is 0");
  const std::uint64_t n = indices_.size();
  num_batches_ = drop_last ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::span<const Index> BatchSampler::batch(std::uint64_t k) const {
  const std::uint64_t begin = k * batch_size_;
  const std::uint64_t end = std::min<std::uint64_t>(begin + batch_size_, indices_.size());
  return std::span<const Index>(indices_).subspan(begin, end - begin);
}

}  // namespace seedloader
