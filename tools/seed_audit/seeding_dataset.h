// SeedingDataset: wraps a Dataset for `seed-audit run`, choosing the stream each
// sample draws from by SeedingMode and recording that stream's fingerprint, taken
// as the sample starts, in an extra int64 field "__rng", and whether the sample
// drew from it at all in a uint8 field "__rng_used" (both appended after the
// wrapped dataset's fields, whose numbering is unchanged).
//   full, sample  the loader's stream (LoaderOptions::seeding kWorker / kSample)
//   torch, naive  a generator the dataset owns, as PyTorch datasets do: made from
//                 the base seed in the parent, copied into every forked worker
//                 (naive: the fork bug), or reseeded in the loader's worker_init
//                 from (base, epoch, worker) with the rank left out (torch).
// The owned generator is `mutable`: each worker process changes only its own copy.
// Not thread-safe (the loader never calls get() concurrently in one process).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/loader_options.h"
#include "tools/seed_audit/seeding_mode.h"

namespace seedloader::audit {

class SeedingDataset final : public Dataset {
 public:
  // `inner` must outlive this. base_seed: the seed every rank's loader uses.
  SeedingDataset(const Dataset& inner, SeedingMode mode, std::uint64_t base_seed);
  SeedingDataset(const SeedingDataset&) = delete;
  SeedingDataset& operator=(const SeedingDataset&) = delete;

  std::uint64_t size() const override { return inner_.size(); }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;
  std::vector<std::uint64_t> shard_sizes() const override { return inner_.shard_sizes(); }
  // The inner data set's own streams, replacements and reads ahead, and the
  // mixture it is (whose order the loader then reads it in).
  Rng sample_rng(std::uint64_t base_seed, std::uint64_t epoch,
                 std::uint64_t index) const override {
    return inner_.sample_rng(base_seed, epoch, index);
  }
  const MixtureDataset* mixture() const override { return inner_.mixture(); }
  Neighbours replacements(std::uint64_t index) const override {
    return inner_.replacements(index);
  }
  void will_read(std::span<const std::uint64_t> indices) const noexcept override {
    inner_.will_read(indices);
  }
  std::uint64_t read_ahead() const override { return inner_.read_ahead(); }

  // The field holding each sample's fingerprint; the next one says if it was used.
  std::size_t fingerprint_field() const { return layout_.num_fields() - 2; }
  // How the loader must seed for this mode (kSample for sample mode).
  SeedScope loader_scope() const;
  // Call in the parent before each epoch starts (torch mode reseeds from it).
  void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
  // For LoaderOptions::worker_init: reseeds the owned generator in torch mode.
  void on_worker_start(int worker);

 private:
  const Dataset& inner_;
  SeedingMode mode_;
  std::uint64_t base_seed_;
  SampleLayout layout_;
  std::uint64_t epoch_ = 0;
  mutable Rng own_;
};

}  // namespace seedloader::audit
