// Sampler: the order in which one rank visits dataset indices in an epoch. Every
// sampler is a pure function of (dataset size, seed, epoch, rank, world size):
// indices(epoch) returns the same list on every call and every machine.
// Immutable after construction, so safe to share across threads and fork.
#pragma once

#include <cstdint>
#include <vector>

namespace seedloader {

using Index = std::uint64_t;

class Sampler {
 public:
  virtual ~Sampler() = default;
  // Number of indices indices(epoch) returns (the same for every epoch).
  virtual std::uint64_t size() const = 0;
  virtual std::vector<Index> indices(std::uint64_t epoch) const = 0;
};

// 0, 1, ..., n-1 in every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(std::uint64_t n) : n_(n) {}
  std::uint64_t size() const override { return n_; }
  std::vector<Index> indices(std::uint64_t epoch) const override;

 private:
  std::uint64_t n_;
};

// A permutation of 0..n-1 drawn from the shuffle stream (0, epoch): equal to
// numpy's Generator(PCG64(SeedSequence(seed, spawn_key=(0, epoch)))).permutation(n).
class RandomSampler : public Sampler {
 public:
  RandomSampler(std::uint64_t n, std::uint64_t seed) : n_(n), seed_(seed) {}
  std::uint64_t size() const override { return n_; }
  std::vector<Index> indices(std::uint64_t epoch) const override;

 private:
  std::uint64_t n_;
  std::uint64_t seed_;
};

// The permutation RandomSampler uses; shared with DistributedSampler.
std::vector<Index> epoch_permutation(std::uint64_t n, std::uint64_t seed,
                                     std::uint64_t epoch);

}  // namespace seedloader
