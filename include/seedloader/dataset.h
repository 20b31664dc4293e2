// Dataset: a map-style source of samples with a fixed layout. get() writes sample
// `index` straight into its place in a batch slot through a SampleWriter (collate
// in place, no intermediate buffer), drawing any randomness from `rng` only.
// Datasets are constructed in the main process and used, read-only, by forked
// workers: keep the index in flat arrays so the workers share its pages.
// get() must be safe to call concurrently from different processes; it is never
// called concurrently on one object within one process.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seedloader/pcg64_stream.h"
#include "seedloader/sample_layout.h"

namespace seedloader {

class MixtureDataset;

// Where one sample's fields go. Made by the loader for each sample; the pointers
// refer to the sample's row in each collated field array of the batch slot.
class SampleWriter {
 public:
  // field_data[f] points at this sample's row of field f; lengths[f] receives the
  // element count written to variable field f (non-variable fields: full size).
  SampleWriter(const SampleLayout& layout, std::span<std::byte* const> field_data,
               std::span<std::uint64_t> lengths, std::uint64_t index)
      : layout_(layout), field_data_(field_data), lengths_(lengths), index_(index) {}

  SampleWriter(const SampleWriter&) = delete;
  SampleWriter& operator=(const SampleWriter&) = delete;

  // The row of field f, typed. Throws DataError if T is not the field's dtype.
  template <typename T>
  std::span<T> field(std::size_t f) const {
    check_dtype(f, dtype_of<T>());
    return {reinterpret_cast<T*>(field_data_[f]),
            static_cast<std::size_t>(layout_.field(f).elements())};
  }
  std::span<std::byte> bytes(std::size_t f) const {
    return {field_data_[f], layout_.field(f).bytes()};
  }

  // Declares how many elements of variable field f this sample filled.
  // Throws DataError naming the sample index and field when n exceeds the
  // declared maximum.
  void set_length(std::size_t f, std::uint64_t n);

  std::uint64_t index() const { return index_; }
  const SampleLayout& layout() const { return layout_; }

 private:
  void check_dtype(std::size_t f, DType want) const;

  const SampleLayout& layout_;
  std::span<std::byte* const> field_data_;
  std::span<std::uint64_t> lengths_;
  std::uint64_t index_;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::uint64_t size() const = 0;
  virtual const SampleLayout& layout() const = 0;
  // Writes sample `index` (< size()) through `out`. Throws DataError for bad input,
  // naming the file/shard and the sample index.
  virtual void get(std::uint64_t index, Rng& rng, SampleWriter& out) const = 0;
  // A short description for messages, e.g. "ImageFolder(/data/train)".
  virtual std::string describe() const = 0;
  // For a data set stored in shards, the sample count of each shard in index
  // order (shard 0 holds indices [0, sizes[0]), ...), which ShuffleOrder::kShards
  // keeps together; empty (the default) for one that is not.
  virtual std::vector<std::uint64_t> shard_sizes() const { return {}; }
  // The samples this process reads next, in order: a worker calls it with the
  // batch it starts, the batches already waiting in its later slots, and then up
  // to read_ahead() samples of the batches no worker has been given yet (the
  // epoch's next ones, for every worker alike). A data set that fetches samples
  // from far away may start fetching them; the default does nothing. Must not
  // throw (a fetch that fails is the read's to report).
  virtual void will_read(std::span<const std::uint64_t> indices) const noexcept {
    (void)indices;
  }
  // How many samples past the workers' slots will_read() should name (0, the
  // default: none). The loader keeps that many indices in shared memory and
  // rewrites them as it hands out batches; at most kMaxReadAhead are used.
  virtual std::uint64_t read_ahead() const { return 0; }
  static constexpr std::uint64_t kMaxReadAhead = 1 << 16;
  // The stream a sample draws from under SeedScope::kSample, `epoch` being the
  // one its order gave it (EpochOrder): by default (2, epoch, index), derive.h's
  // sample_stream.
  virtual Rng sample_rng(std::uint64_t base_seed, std::uint64_t epoch,
                         std::uint64_t index) const;
  // The indices [first, first + count) that a bad sample at `index` is replaced
  // from under BadSample::kSkip (the ones after it, wrapping round within the
  // range): by default the whole data set; a mixture keeps a replacement within
  // the sample's source.
  struct Neighbours {
    std::uint64_t first = 0;
    std::uint64_t count = 0;
  };
  virtual Neighbours replacements(std::uint64_t index) const;
  // The mixture this data set is (or, for a wrapper, the one it wraps), whose
  // order a loader reads it in (loader_sampler(), loader_options.h); nullptr (the
  // default) for any other. Not owned: it lives as long as this data set.
  virtual const MixtureDataset* mixture() const { return nullptr; }
};

}  // namespace seedloader
