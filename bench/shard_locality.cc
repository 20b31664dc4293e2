// What each node downloads in one epoch of a sharded data set read through a
// bounded shard cache, for 1 to 64 nodes (one rank each), under each order and
// partition: the rank's indices from the loader's own samplers (make_sampler), fed
// in order through a least-recently-used cache of shards. A model, not a run: no
// byte moves, so it prints the figures for a data set of ImageNet's shape in a
// moment. The last rows split the shard order by canonical nodes
// (LoaderOptions::canonical_nodes, here 64), so each node reads its own parts.
// Usage: bench/shard_locality [--shards K] [--cache-shards C] [--canonical-nodes P]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "seedloader/loader_options.h"

namespace {

using seedloader::Index;

// An LRU cache of whole shards, bounded in bytes; counts what it fetches.
class ShardCacheModel {
 public:
  ShardCacheModel(const std::vector<std::uint64_t>& bytes, std::uint64_t limit)
      : bytes_(bytes), limit_(limit) {}

  void read(std::size_t shard) {
    if (auto it = where_.find(shard); it != where_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second);
      return;
    }
    while (!recent_.empty() && held_ + bytes_[shard] > limit_) {
      held_ -= bytes_[recent_.back()];
      where_.erase(recent_.back());
      recent_.pop_back();
    }
    recent_.push_front(shard);
    where_[shard] = recent_.begin();
    held_ += bytes_[shard];
    fetched_ += bytes_[shard];
  }
  std::uint64_t fetched() const { return fetched_; }

 private:
  const std::vector<std::uint64_t>& bytes_;
  std::uint64_t limit_;
  std::list<std::size_t> recent_;  // most recent first
  std::unordered_map<std::size_t, std::list<std::size_t>::iterator> where_;
  std::uint64_t held_ = 0;
  std::uint64_t fetched_ = 0;
};

std::uint64_t flag(int argc, char** argv, const char* name, std::uint64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  // ImageNet's shape: about 1.28 M samples of 110 KB on average, here in shards
  // of 400 to 599 samples (about 55 MB).
  const std::uint64_t num_shards = flag(argc, argv, "--shards", 2560);
  const std::uint64_t cache_shards = flag(argc, argv, "--cache-shards", 32);
  const std::uint64_t sample_bytes = 110'000;
  std::vector<std::uint64_t> samples, bytes;
  std::vector<std::size_t> shard_of;
  for (std::uint64_t s = 0; s < num_shards; ++s) {
    samples.push_back(400 + (s * 37) % 200);
    bytes.push_back(samples.back() * sample_bytes);
    shard_of.insert(shard_of.end(), samples.back(), s);
  }
  const std::uint64_t n = shard_of.size();
  const std::uint64_t total = n * sample_bytes;
  const std::uint64_t limit = cache_shards * 599 * sample_bytes;
  const std::uint64_t global_batch = 256;
  std::printf(
      "%llu samples in %llu shards (%.1f GB); a cache of %.1f GB per node "
      "(%llu of the largest shards); global batch %llu; epoch 0, seed 0\n\n",
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(num_shards),
      total / 1e9, limit / 1e9, static_cast<unsigned long long>(cache_shards),
      static_cast<unsigned long long>(global_batch));
  std::printf(
      "| order | partition | nodes | downloaded per node (x data set) | "
      "x its share |\n| --- | --- | --- | --- | --- |\n");
  struct Order {
    const char* name;
    seedloader::ShuffleOrder order;
  };
  struct Row {
    const char* order_name;
    seedloader::ShuffleOrder order;
    seedloader::Partition partition;
    std::uint64_t canonical;
    std::vector<std::uint64_t> nodes;
  };
  const std::uint64_t parts = flag(argc, argv, "--canonical-nodes", 64);
  constexpr std::uint64_t kPerNode = UINT64_MAX;  // C = the row's node count
  const std::vector<std::uint64_t> few{1, 2, 4}, many{1, 2, 4, 8, 64};
  const std::vector<Row> rows{
      {"numpy", seedloader::ShuffleOrder::kNumpy, seedloader::Partition::kStrided, 0,
       few},
      {"numpy", seedloader::ShuffleOrder::kNumpy, seedloader::Partition::kElastic, 0,
       few},
      {"shards", seedloader::ShuffleOrder::kShards, seedloader::Partition::kStrided, 0,
       many},
      {"shards", seedloader::ShuffleOrder::kShards, seedloader::Partition::kElastic, 0,
       many},
      {"shards", seedloader::ShuffleOrder::kShards, seedloader::Partition::kElastic,
       kPerNode, many},
      {"shards",
       seedloader::ShuffleOrder::kShards,
       seedloader::Partition::kElastic,
       parts,
       {4, 8, 16, 32, 64}},
  };
  for (const Row& row : rows) {
    for (const std::uint64_t nodes : row.nodes) {
      const std::uint64_t c = row.canonical == kPerNode ? nodes : row.canonical;
      if (global_batch % nodes != 0 || (c && c % nodes != 0)) continue;
      double worst = 0;
      for (std::uint64_t rank = 0; rank < nodes; ++rank) {
        seedloader::LoaderOptions o;
        o.shuffle = true;
        o.order = row.order;
        o.partition = row.partition;
        o.seeding = seedloader::SeedScope::kSample;
        o.world_size = nodes;
        o.rank = rank;
        o.batch_size = global_batch / nodes;
        o.canonical_nodes = c;
        ShardCacheModel cache(bytes, limit);
        for (Index i : seedloader::make_sampler(n, o, 0, samples)->indices(0))
          cache.read(shard_of[i]);
        worst = std::max(worst, static_cast<double>(cache.fetched()) / total);
      }
      std::string partition =
          row.partition == seedloader::Partition::kStrided ? "strided" : "elastic";
      if (c) partition += ", " + std::to_string(c) + " canonical nodes";
      std::printf("| %s | %s | %llu | %.3f | %.3f |\n", row.order_name, partition.c_str(),
                  static_cast<unsigned long long>(nodes), worst, worst * nodes);
    }
  }
  return 0;
}
