#include "seedloader/ledger.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>

#include "seedloader/batch_sampler.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/sampler.h"

namespace seedloader {
namespace {

std::uint64_t query_size(const LedgerQuery& q) {
  if (!q.mixture) return q.dataset_size;
  std::uint64_t n = 0;
  for (const std::uint64_t size : q.mixture->sizes) n += size;
  return n;
}

LoaderOptions rank_options(const LedgerQuery& q, std::uint64_t rank) {
  LoaderOptions o = q.options;
  o.rank = rank;
  o.batch_plan = nullptr;
  validate(o, query_size(q));
  if (q.mixture && o.order == ShuffleOrder::kShards && o.shuffle)
    throw ConfigError(
        "a mixture reads each source through its own permutations; "
        "order shards does not apply");
  if (q.mixture && o.world_size > 1 && o.partition != Partition::kElastic)
    throw ConfigError("a mixture over " + std::to_string(o.world_size) +
                      " ranks needs partition elastic (its global batches are composed "
                      "whole), not strided");
  return o;
}

MixtureSampler mixture_order(const LedgerQuery& q, const LoaderOptions& o) {
  const LedgerMixture& m = *q.mixture;
  return MixtureSampler(m.names, m.sizes, m.history, m.samples_per_epoch, o.batch_size,
                        o.world_size, o.rank, q.seed, m.known);
}

// One rank's batches of the query's epoch, and the epoch each index's stream is
// keyed by (flat, in the batches' order; empty: the epoch).
struct RankOrder {
  BatchSampler batches;
  std::vector<std::uint64_t> stream_epochs;
};

RankOrder rank_order(const LedgerQuery& q, std::uint64_t rank) {
  const LoaderOptions o = rank_options(q, rank);
  if (q.mixture) {
    EpochOrder order = mixture_order(q, o).order(q.epoch);
    return {BatchSampler(std::move(order.indices), o.batch_size, false),
            std::move(order.stream_epochs)};
  }
  const std::unique_ptr<Sampler> sampler =
      make_sampler(q.dataset_size, o, q.seed, q.shard_sizes);
  return {BatchSampler(sampler->indices(q.epoch), o.batch_size, o.drop_last), {}};
}

// A mixture's sources, for the streams of its samples.
struct SourceKeys {
  std::vector<std::uint64_t> offsets;  // per source, then the total
  std::vector<std::uint64_t> keys;     // source_key() of each name

  explicit SourceKeys(const std::optional<LedgerMixture>& m) {
    if (!m) return;
    offsets.push_back(0);
    for (std::size_t s = 0; s < m->names.size(); ++s) {
      offsets.push_back(offsets.back() + m->sizes[s]);
      keys.push_back(source_key(m->names[s]));
    }
  }
  // (source, index within it) of mixture index `index`.
  std::pair<std::uint32_t, std::uint64_t> locate(std::uint64_t index) const {
    const auto s = static_cast<std::uint32_t>(
        std::upper_bound(offsets.begin(), offsets.end(), index) - offsets.begin() - 1);
    return {s, index - offsets[s]};
  }
};

}  // namespace

LedgerMixture ledger_mixture(const MixtureDataset& mixture) {
  LedgerMixture m;
  for (const MixtureSource& s : mixture.sources()) {
    m.names.push_back(s.name);
    m.sizes.push_back(s.dataset->size());
  }
  m.history = mixture.history();
  m.samples_per_epoch = mixture.samples_per_epoch();
  m.known = mixture.known();
  return m;
}

std::uint64_t ledger_steps(const LedgerQuery& query) {
  const LoaderOptions o = rank_options(query, 0);
  if (query.mixture) return mixture_order(query, o).steps_per_epoch();
  return batches_per_epoch(
      {.samples =
           make_sampler(query.dataset_size, o, query.seed, query.shard_sizes)->size(),
       .batch_size = o.batch_size,
       .drop_last = o.drop_last});
}

void ledger(const LedgerQuery& q, const std::function<void(const LedgerEntry&)>& emit) {
  const std::uint64_t world = q.options.world_size;
  if (q.rank && *q.rank >= world) {
    throw ConfigError("rank " + std::to_string(*q.rank) + " is outside a world of " +
                      std::to_string(world));
  }
  const int workers = q.options.num_workers;
  if (q.worker && (*q.worker < 0 || *q.worker >= std::max(workers, 1))) {
    throw ConfigError("worker " + std::to_string(*q.worker) + " is outside the " +
                      std::to_string(std::max(workers, 1)) + " worker(s) of --workers " +
                      std::to_string(workers));
  }
  const std::uint64_t steps = ledger_steps(q);
  if (q.first_step >= q.end_step || q.end_step > steps) {
    throw ConfigError("steps [" + std::to_string(q.first_step) + ", " +
                      std::to_string(q.end_step) + ") are not within epoch " +
                      std::to_string(q.epoch) + "'s " + std::to_string(steps) + " steps");
  }
  const bool per_sample = q.options.seeding == SeedScope::kSample;
  std::vector<std::uint64_t> skipped_samples = q.options.skip.samples;
  std::sort(skipped_samples.begin(), skipped_samples.end());
  const SourceKeys sources(q.mixture);
  // Every rank's order of the epoch first; then the entries by step, rank and slot,
  // each handed on as it is made.
  const std::uint64_t first_rank = q.rank.value_or(0);
  const std::uint64_t end_rank = q.rank ? *q.rank + 1 : world;
  std::vector<RankOrder> orders;
  orders.reserve(end_rank - first_rank);
  for (std::uint64_t rank = first_rank; rank < end_rank; ++rank)
    orders.push_back(rank_order(q, rank));
  const auto gone = [&](Index i) {
    return std::binary_search(skipped_samples.begin(), skipped_samples.end(), i);
  };
  LedgerEntry e;
  for (std::uint64_t step = q.first_step; step < q.end_step; ++step) {
    const int worker = workers > 0 ? static_cast<int>(step % workers) : 0;
    if (q.worker && *q.worker != worker) continue;
    const bool step_skipped = q.options.skip.step(q.epoch, step);
    for (std::uint64_t rank = first_rank; rank < end_rank; ++rank) {
      const RankOrder& order = orders[rank - first_rank];
      const std::span<const Index> batch = order.batches.batch(step);
      // A skipped sample's place goes to the next one: slots count the delivered.
      std::uint64_t delivered = 0;
      for (std::uint64_t slot = 0; slot < batch.size(); ++slot) {
        e = LedgerEntry{};
        e.epoch = q.epoch;
        e.step = step;
        e.rank = rank;
        e.worker = worker;
        e.index = batch[slot];
        e.stream_epoch = order.stream_epochs.empty()
                             ? q.epoch
                             : order.stream_epochs[step * q.options.batch_size + slot];
        e.skipped = step_skipped || gone(e.index);
        e.slot = e.skipped ? slot : delivered++;
        if (q.skipped_only && !e.skipped) continue;
        if (q.mixture) std::tie(e.source, e.source_index) = sources.locate(e.index);
        if (per_sample && q.mixture) {
          const std::uint64_t key = sources.keys[e.source];
          e.stream = mixture_sample_key(key, e.stream_epoch, e.source_index);
          e.fingerprint =
              mixture_sample_stream(q.seed, key, e.stream_epoch, e.source_index)
                  .fingerprint();
        } else if (per_sample) {
          e.stream = sample_key(q.epoch, e.index);
          e.fingerprint = sample_stream(q.seed, q.epoch, e.index).fingerprint();
        } else {
          e.stream = worker_key(q.epoch, rank, static_cast<std::uint64_t>(worker));
        }
        emit(e);
      }
    }
  }
}

std::vector<LedgerEntry> ledger(const LedgerQuery& q) {
  std::vector<LedgerEntry> out;
  ledger(q, [&](const LedgerEntry& e) { out.push_back(e); });
  return out;
}

}  // namespace seedloader
