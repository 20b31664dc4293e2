#include "seedloader/elastic_sampler.h"

#include <algorithm>
#include <string>

#include "seedloader/batch_sampler.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {
[[noreturn]] void fail(const std::string& why) {
  throw ConfigError("ElasticSampler: " + why);
}
}  // namespace

ElasticSampler::ElasticSampler(std::uint64_t dataset_size, ElasticOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const ElasticOptions& o = options_;
  if (o.world_size == 0) fail("world_size is 0");
  if (o.batch_size == 0) fail("batch_size is 0");
  if (o.rank >= o.world_size) {
    fail("rank " + std::to_string(o.rank) + " is not below world_size " +
         std::to_string(o.world_size));
  }
  if (o.batch_size > UINT64_MAX / o.world_size) fail("batch_size x world_size overflows");
  global_ = o.batch_size * o.world_size;
  if (o.canonical_nodes > 0 && global_ % o.canonical_nodes != 0) {
    fail("canonical_nodes " + std::to_string(o.canonical_nodes) +
         " does not divide the global batch of " + std::to_string(global_) +
         " (batch_size " + std::to_string(o.batch_size) + " x world_size " +
         std::to_string(o.world_size) +
         "): each global batch takes G / C samples of "
         "each of the C parts");
  }
  num_batches_ = batches_per_epoch(
      {.samples = dataset_size_, .batch_size = global_, .drop_last = o.drop_last});
  if (o.drop_last && num_batches_ == 0) {
    fail("a data set of " + std::to_string(dataset_size_) +
         " samples holds no whole global batch of " + std::to_string(global_) +
         " (batch_size " + std::to_string(o.batch_size) + " x world_size " +
         std::to_string(o.world_size) + ") with drop_last");
  }
}

std::vector<Index> ElasticSampler::global_indices(std::uint64_t epoch) const {
  const std::uint64_t n = dataset_size_;
  if (n == 0) return {};
  const std::uint64_t total = num_batches_ * global_;
  const std::uint64_t parts = options_.canonical_nodes;
  std::vector<Index> order;
  if (parts > 1 && options_.shuffle && options_.order == ShuffleOrder::kShards) {
    // Shuffled within each part, so a part holds whole shards but its two ends.
    if (!options_.shards)
      throw ConfigError("ElasticSampler: order shards needs the data set's shards");
    order =
        shard_part_permutation(n, *options_.shards, options_.seed, epoch, parts, total);
  } else {
    order = options_.shuffle ? epoch_permutation(n, options_.seed, epoch, options_.order,
                                                 options_.shards.get())
                             : SequentialSampler(n).indices(epoch);
    if (total <= n) {
      order.resize(total);
    } else {
      order.reserve(total);
      for (std::uint64_t pos = n; pos < total; ++pos) order.push_back(order[pos % n]);
    }
  }
  if (parts <= 1) return order;
  // Global batch g: the g-th run of G / C positions of each part, part after part.
  const std::uint64_t run = global_ / parts, part = total / parts;
  std::vector<Index> split(total);
  for (std::uint64_t g = 0; g < num_batches_; ++g)
    for (std::uint64_t c = 0; c < parts; ++c)
      std::copy_n(order.begin() + static_cast<std::ptrdiff_t>(c * part + g * run), run,
                  split.begin() + static_cast<std::ptrdiff_t>(g * global_ + c * run));
  return split;
}

std::vector<Index> ElasticSampler::indices(std::uint64_t epoch) const {
  const std::vector<Index> all = global_indices(epoch);
  const std::uint64_t b = options_.batch_size;
  std::vector<Index> mine;
  mine.reserve(size());
  for (std::uint64_t g = 0; g < num_batches_; ++g) {
    const std::uint64_t first = g * global_ + options_.rank * b;
    mine.insert(mine.end(), all.begin() + static_cast<std::ptrdiff_t>(first),
                all.begin() + static_cast<std::ptrdiff_t>(first + b));
  }
  return mine;
}

std::vector<Index> ElasticSampler::preceding(std::uint64_t epoch) const {
  const std::vector<Index> all = global_indices(epoch);
  const std::uint64_t before =
      (options_.rank * options_.batch_size + global_ - 1) % global_;
  std::vector<Index> out;
  out.reserve(num_batches_);
  for (std::uint64_t g = 0; g < num_batches_; ++g)
    out.push_back(all[g * global_ + before]);
  return out;
}

}  // namespace seedloader
