#include "seedloader/loader_options.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "seedloader/dataset.h"
#include "seedloader/distributed_sampler.h"
#include "seedloader/elastic_sampler.h"
#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"

namespace seedloader {

namespace {
constexpr int kMaxWorkers = 1024;
constexpr int kMaxPrefetch = 1024;
// Soft targets take num_classes floats per sample.
constexpr std::int64_t kMaxClasses = std::int64_t{1} << 24;

[[noreturn]] void fail(const std::string& what) {
  throw ConfigError("LoaderOptions: " + what);
}
}  // namespace

std::uint64_t default_canonical_nodes(const LoaderOptions& o) {
  // Only a node count that divides the world (the same ranks on every node): a
  // launcher's count that does not (one process of a bigger allocation) is not
  // this world's.
  const bool split = o.partition == Partition::kElastic && o.shuffle &&
                     o.order == ShuffleOrder::kShards && o.nodes > 1 &&
                     o.world_size % o.nodes == 0;
  return split ? o.nodes : 0;
}

void validate(const LoaderOptions& o, std::uint64_t dataset_size) {
  if (o.batch_size == 0) fail("batch_size must be at least 1");
  if (o.num_workers < 0 || o.num_workers > kMaxWorkers) {
    fail("num_workers must be in [0, " + std::to_string(kMaxWorkers) + "], got " +
         std::to_string(o.num_workers));
  }
  if (o.prefetch < 1 || o.prefetch > kMaxPrefetch) {
    fail("prefetch must be in [1, " + std::to_string(kMaxPrefetch) + "], got " +
         std::to_string(o.prefetch));
  }
  if (o.world_size == 0) fail("world_size must be at least 1");
  if (o.rank >= o.world_size) {
    fail("rank " + std::to_string(o.rank) + " must be below world_size " +
         std::to_string(o.world_size));
  }
  if (o.timeout.count() < 0) fail("timeout must not be negative");
  if (o.batch_plan && o.shuffle) {
    fail("shuffle must be false when batch_plan gives the order");
  }
  if (o.partition == Partition::kElastic) {
    if (o.seeding != SeedScope::kSample) {
      fail(
          "partition elastic needs seeding sample: a worker's stream depends on the "
          "worker count and the rank, so the same global batch would be augmented "
          "differently at another world size");
    }
    if (o.batch_plan)
      fail("partition elastic draws its own order; a batch_plan replaces it");
  }
  if (o.canonical_nodes > 0) {
    if (o.partition != Partition::kElastic)
      fail("canonical_nodes needs partition elastic, whose global batches they split");
    if (o.nodes > 0 &&
        (o.canonical_nodes % o.nodes != 0 || o.world_size % o.nodes != 0)) {
      fail("canonical_nodes " + std::to_string(o.canonical_nodes) + " on " +
           std::to_string(o.nodes) + " nodes of " + std::to_string(o.world_size) +
           " ranks: the node count must divide canonical_nodes (each node reads whole "
           "parts) and the world size (the same ranks on every node)");
    }
  }
  if (dataset_size == 0) fail("the dataset is empty");
  for (const StepRange& r : o.skip.steps) {
    if (r.first >= r.end || r.epochs == 0) {
      fail("skip: steps [" + std::to_string(r.first) + ", " + std::to_string(r.end) +
           ") of " + std::to_string(r.epochs) + " epoch(s) from epoch " +
           std::to_string(r.epoch) + " are empty");
    }
  }
  if (!o.skip.samples.empty() && o.mix.enabled()) {
    fail(
        "skipping samples with MixUp or CutMix: a skipped sample would still be mixed "
        "into its neighbour, and the others' partners would change");
  }
  if (!o.skip.samples.empty() && o.seeding != SeedScope::kSample) {
    fail(
        "skipping samples needs seeding sample: a worker's stream would reach the "
        "samples after a skipped one in another state, so they would change");
  }
  const BatchMix& m = o.mix;
  for (const auto& [name, alpha] : {std::pair{"mixup_alpha", m.mixup_alpha},
                                    std::pair{"cutmix_alpha", m.cutmix_alpha}}) {
    if (!std::isfinite(alpha) || alpha < 0.0) {
      fail(std::string(name) + " must be a finite number >= 0 (0: off), got " +
           std::to_string(alpha));
    }
  }
  if (!(m.cutmix_prob >= 0.0 && m.cutmix_prob <= 1.0)) {
    fail("cutmix_prob must be in [0, 1], got " + std::to_string(m.cutmix_prob));
  }
  if (m.enabled() && (m.num_classes < 1 || m.num_classes > kMaxClasses)) {
    fail("num_classes must be in [1, " + std::to_string(kMaxClasses) +
         "] for MixUp or CutMix, got " + std::to_string(m.num_classes));
  }
}

std::vector<StepRange> epoch_step_ranges(std::uint64_t first, std::uint64_t end,
                                         std::uint64_t per_epoch) {
  std::vector<StepRange> out;
  if (per_epoch == 0 || first >= end) return out;
  const std::uint64_t head = first / per_epoch, last = (end - 1) / per_epoch;
  const std::uint64_t from = first % per_epoch, to = (end - 1) % per_epoch + 1;
  if (head == last) {
    out.push_back({head, from, to});
    return out;
  }
  out.push_back({head, from, per_epoch});
  if (last - head > 1) out.push_back({head + 1, 0, per_epoch, last - head - 1});
  out.push_back({last, 0, to});
  return out;
}

std::unique_ptr<Sampler> make_sampler(std::uint64_t dataset_size,
                                      const LoaderOptions& options, std::uint64_t seed,
                                      std::vector<std::uint64_t> shard_sizes) {
  std::shared_ptr<const ShardBlocks> shards;
  // Without shards, a kShards sampler still knows its size; its indices() is the
  // ConfigError.
  if (options.order == ShuffleOrder::kShards && options.shuffle && !shard_sizes.empty()) {
    std::uint64_t block = options.shuffle_block;
    if (block == 0)
      block = 4 * std::max<std::uint64_t>(
                      1, *std::max_element(shard_sizes.begin(), shard_sizes.end()));
    shards =
        std::make_shared<const ShardBlocks>(ShardBlocks{std::move(shard_sizes), block});
  }
  if (options.partition == Partition::kElastic) {
    ElasticOptions e;
    e.world_size = options.world_size;
    e.rank = options.rank;
    e.batch_size = options.batch_size;
    e.shuffle = options.shuffle;
    e.seed = seed;
    e.drop_last = options.drop_last;
    e.order = options.order;
    e.shards = shards;
    e.canonical_nodes = options.canonical_nodes;
    return std::make_unique<ElasticSampler>(dataset_size, e);
  }
  if (options.world_size > 1) {
    DistributedOptions d;
    d.world_size = options.world_size;
    d.rank = options.rank;
    d.shuffle = options.shuffle;
    d.seed = seed;
    d.order = options.order;
    d.shards = shards;
    return std::make_unique<DistributedSampler>(dataset_size, d);
  }
  if (options.shuffle)
    return std::make_unique<RandomSampler>(dataset_size, seed, options.order, shards);
  return std::make_unique<SequentialSampler>(dataset_size);
}

std::unique_ptr<Sampler> loader_sampler(const Dataset& data, const LoaderOptions& options,
                                        std::uint64_t seed) {
  if (const MixtureDataset* mixture = data.mixture()) {
    if (options.batch_plan)
      throw ConfigError(
          "DataLoader: a mixture sets its own order; a sampler or batch "
          "sampler cannot be given with one");
    if (options.partition == Partition::kStrided && options.world_size > 1)
      throw ConfigError("DataLoader: a mixture over " +
                        std::to_string(options.world_size) +
                        " ranks needs partition elastic (its global batches are "
                        "composed whole), not strided");
    return std::make_unique<MixtureSampler>(*mixture, options.batch_size,
                                            options.world_size, options.rank, seed);
  }
  return make_sampler(data.size(), options, seed,
                      options.order == ShuffleOrder::kShards
                          ? data.shard_sizes()
                          : std::vector<std::uint64_t>{});
}

}  // namespace seedloader
