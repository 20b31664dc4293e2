#include "seedloader/ledger.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "seedloader/batch_sampler.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/sampler.h"

namespace seedloader {
namespace {

LoaderOptions rank_options(const LedgerQuery& q, std::uint64_t rank) {
  LoaderOptions o = q.options;
  o.rank = rank;
  o.batch_plan = nullptr;
  validate(o, q.dataset_size);
  return o;
}

BatchSampler rank_batches(const LedgerQuery& q, std::uint64_t rank) {
  const LoaderOptions o = rank_options(q, rank);
  const std::unique_ptr<Sampler> sampler =
      make_sampler(q.dataset_size, o, q.seed, q.shard_sizes);
  return BatchSampler(sampler->indices(q.epoch), o.batch_size, o.drop_last);
}

}  // namespace

std::uint64_t ledger_steps(const LedgerQuery& query) {
  const LoaderOptions o = rank_options(query, 0);
  const std::uint64_t samples =
      make_sampler(query.dataset_size, o, query.seed, query.shard_sizes)->size();
  return o.drop_last ? samples / o.batch_size
                     : (samples + o.batch_size - 1) / o.batch_size;
}

std::vector<LedgerEntry> ledger(const LedgerQuery& q) {
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
  std::vector<LedgerEntry> out;
  for (std::uint64_t rank = q.rank.value_or(0); rank < (q.rank ? *q.rank + 1 : world);
       ++rank) {
    const BatchSampler batches = rank_batches(q, rank);
    for (std::uint64_t step = q.first_step; step < q.end_step; ++step) {
      const int worker = workers > 0 ? static_cast<int>(step % workers) : 0;
      if (q.worker && *q.worker != worker) continue;
      const std::span<const Index> batch = batches.batch(step);
      const auto gone = [&](Index i) {
        return std::binary_search(skipped_samples.begin(), skipped_samples.end(), i);
      };
      const bool step_skipped = q.options.skip.step(q.epoch, step);
      // A skipped sample's place goes to the next one: slots count the delivered.
      std::uint64_t delivered = 0;
      for (std::uint64_t slot = 0; slot < batch.size(); ++slot) {
        LedgerEntry e;
        e.epoch = q.epoch;
        e.step = step;
        e.rank = rank;
        e.worker = worker;
        e.index = batch[slot];
        e.skipped = step_skipped || gone(e.index);
        e.slot = e.skipped ? slot : delivered++;
        if (q.skipped_only && !e.skipped) continue;
        if (per_sample) {
          e.stream = sample_key(q.epoch, e.index);
          e.fingerprint = sample_stream(q.seed, q.epoch, e.index).fingerprint();
        } else {
          e.stream = worker_key(q.epoch, rank, static_cast<std::uint64_t>(worker));
        }
        out.push_back(std::move(e));
      }
    }
  }
  // By step, then rank, then slot.
  std::stable_sort(
      out.begin(), out.end(),
      [](const LedgerEntry& a, const LedgerEntry& b) { return a.step < b.step; });
  return out;
}

}  // namespace seedloader
