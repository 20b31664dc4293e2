#include "seedloader/distributed_sampler.h"

#include <string>

#include "seedloader/error.h"

namespace seedloader {

DistributedSampler::DistributedSampler(std::uint64_t dataset_size,
                                       DistributedOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const std::uint64_t n = dataset_size_;
  const std::uint64_t r = options_.world_size;
  if (r == 0) throw ConfigError("DistributedSampler: world_size is 0");
  if (options_.rank >= r) {
    throw ConfigError("DistributedSampler: rank " + std::to_string(options_.rank) +
                      " is not below world_size " + std::to_string(r));
  }
  if (options_.drop_last && n % r != 0) {
    // ceil((N - R) / R); PyTorch would compute a negative count for N < R.
    if (n < r) {
      throw ConfigError("DistributedSampler: dataset of " + std::to_string(n) +
                        " samples cannot give each of " + std::to_string(r) +
                        " ranks a sample with drop_last");
    }
    num_samples_ = (n - r + r - 1) / r;
  } else {
    num_samples_ = (n + r - 1) / r;
  }
}

std::vector<Index> DistributedSampler::indices(std::uint64_t epoch) const {
  const std::uint64_t n = dataset_size_;
  const std::uint64_t r = options_.world_size;
  if (n == 0) return {};
  std::vector<Index> all = options_.shuffle
                               ? epoch_permutation(n, options_.seed, epoch,
                                                   options_.order, options_.shards.get())
                               : SequentialSampler(n).indices(epoch);
  const std::uint64_t total = total_size();
  // Padding repeats from the start (whole copies when padding exceeds N);
  // truncation keeps the first `total` indices.
  std::vector<Index> mine;
  mine.reserve(num_samples_);
  for (std::uint64_t pos = options_.rank; pos < total; pos += r) {
    mine.push_back(all[pos % n]);
  }
  return mine;
}

}  // namespace seedloader
