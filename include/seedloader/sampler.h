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

// Which generator shuffles an epoch.
//  kNumpy (the default): the shuffle stream (0, epoch) of the seed's PCG64
//    family, numpy's Generator(PCG64(SeedSequence(seed, spawn_key=(0, epoch))))
//    .permutation(n); independent of every other stream, and reproducible in
//    numpy alone.
//  kTorch: PyTorch's DistributedSampler(shuffle=True, seed=seed) after
//    set_epoch(epoch), torch.randperm(n, generator=Generator().manual_seed(seed +
//    epoch)): for comparing with, or continuing, a PyTorch run. torch's CPU
//    generator keeps only the low 32 bits of a seed (and 1.13's randperm draws
//    32-bit numbers), so seeds that agree there give the same order.
enum class ShuffleOrder { kNumpy, kTorch };

// A permutation of 0..n-1 for `epoch`, drawn as `order` says.
class RandomSampler : public Sampler {
 public:
  RandomSampler(std::uint64_t n, std::uint64_t seed,
                ShuffleOrder order = ShuffleOrder::kNumpy)
      : n_(n), seed_(seed), order_(order) {}
  std::uint64_t size() const override { return n_; }
  std::vector<Index> indices(std::uint64_t epoch) const override;

 private:
  std::uint64_t n_;
  std::uint64_t seed_;
  ShuffleOrder order_;
};

// The permutation RandomSampler uses; shared with DistributedSampler.
std::vector<Index> epoch_permutation(std::uint64_t n, std::uint64_t seed,
                                     std::uint64_t epoch,
                                     ShuffleOrder order = ShuffleOrder::kNumpy);

// torch.randperm(n, generator=torch.Generator().manual_seed(seed)) on the CPU,
// as torch 1.13 computes it: mt19937 seeded with seed's low 32 bits, then
// for i in [0, n-1): swap(r[i], r[i + next32() % (n - i)]).
std::vector<Index> torch_randperm(std::uint64_t n, std::uint64_t seed);

}  // namespace seedloader
