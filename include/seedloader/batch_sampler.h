// BatchSampler: groups one epoch's indices into batches of batch_size; the last,
// short batch is kept unless drop_last. Or holds batches given whole (a user's
// batch sampler), of any sizes. Owns the epoch's index list.
// batches_per_epoch(): the one count of the batches a rank reads in an epoch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "seedloader/sampler.h"

namespace seedloader {

// An epoch as batches_per_epoch() cuts it: `samples` positions read in batches of
// `batch_size`.
struct EpochBatching {
  std::uint64_t samples = 0;
  std::uint64_t batch_size = 1;
  bool drop_last = false;  // drop the last, short batch instead of reading it
};

// The batches a rank reads in an epoch:
//   drop_last ? floor(samples / batch_size) : ceil(samples / batch_size)
// computed without overflow for any 64-bit `samples`. Every count of batches per
// epoch is this one (the engine's, BatchSampler's, ElasticSampler's, a mixture's
// steps, the ledger's, seed-audit's, Python's len()), so no two can disagree.
// What is cut depends on the partition, and its sampler states it:
//   strided: the rank's ceil(N / W) samples in batches of b (the loader pads every
//     rank and leaves drop_last to the batches);
//   elastic: the epoch's N samples in global batches of G = b x W, each giving
//     every rank one batch of b; canonical nodes and the order move samples
//     between positions, never the count;
//   a mixture: samples_per_epoch in global batches of G, never drop_last (every
//     step is a whole global batch).
// A Sampler's size() is its rank's samples, so {size(), b, drop_last} counts the
// batches of any partition, and of a data set's own order.
// Throws ConfigError when batch_size is 0.
std::uint64_t batches_per_epoch(const EpochBatching& epoch);

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
