// The ledger: which samples a step of a run trains on, computed from the loader's
// configuration alone. No sample is read and no batch is replayed: the order, the
// partition and every per-sample stream are pure functions of (options, data set
// size, base seed, epoch), so a query costs one epoch's order whatever the step
// (for a data set of N samples, O(N) once; the steps asked for on top).
//
// Step K of epoch E is the K-th batch of that epoch on every rank (the ranks step
// together). Each entry is one sample of one rank's batch: where it sits (rank,
// slot in the batch), which worker fills it when the epoch runs from its first
// batch (batch k goes to worker k % num_workers; 0 with no workers), its index and
// its random stream. Under SeedScope::kSample that stream is (2, epoch, index) and
// its fingerprint is the one the loader writes beside the sample; under kWorker it
// is the worker's (1, epoch, rank, worker), whose state at a sample depends on the
// draws of the worker's earlier samples, so no fingerprint is given.
// A batch plan (LoaderOptions::batch_plan, a Python sampler's batches) is not a
// configuration: the ledger does not take one. Declared skips (LoaderOptions::skip)
// are kept in the entries and marked: every other entry is where it would be.
// A mixture (mixture_dataset.h) sets its own order: given its shape
// (LedgerMixture), the ledger computes it as the loader's MixtureSampler does, each
// sample's stream keyed by its source and source epoch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "seedloader/loader_options.h"
#include "seedloader/mixture.h"
#include "seedloader/mixture_dataset.h"

namespace seedloader {

// What the ledger needs of a mixture to compute its order: MixtureSampler's
// shape arguments.
struct LedgerMixture {
  std::vector<std::string> names;  // in the last schedule's order
  std::vector<std::uint64_t> sizes;
  std::vector<MixtureSegment> history;
  std::uint64_t samples_per_epoch = 1;
  std::vector<MixturePoint> known;
};

// The shape of `mixture`.
LedgerMixture ledger_mixture(const MixtureDataset& mixture);

struct LedgerQuery {
  // batch_size, num_workers, shuffle, order, shuffle_block, drop_last,
  // world_size, partition and seeding are read; rank is ignored (see `rank`).
  LoaderOptions options;
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  // Dataset::shard_sizes(), for ShuffleOrder::kShards.
  std::vector<std::uint64_t> shard_sizes;
  // Set for a mixture, whose order this is (dataset_size is then ignored):
  // batch_size, num_workers, world_size, partition, seeding and skip are read.
  std::optional<LedgerMixture> mixture;
  std::uint64_t epoch = 0;
  std::uint64_t first_step = 0;
  std::uint64_t end_step = 1;         // steps [first_step, end_step)
  std::optional<std::uint64_t> rank;  // unset: every rank
  std::optional<int> worker;          // unset: every worker
  // Only the entries declared skipped: a run's declared skips over many steps in
  // one query (its cost the epoch's order per rank, its memory the skipped).
  bool skipped_only = false;
};

struct LedgerEntry {
  std::uint64_t epoch = 0;
  std::uint64_t step = 0;
  std::uint64_t rank = 0;
  int worker = 0;
  // Its place in the rank's batch as delivered (a skipped sample: the place it had).
  std::uint64_t slot = 0;
  std::uint64_t index = 0;
  // The epoch its per-sample stream is keyed by: `epoch`, or a mixture source's.
  std::uint64_t stream_epoch = 0;
  // A mixture's sample: its source (a position in LedgerMixture::names) and its
  // index there.
  std::uint32_t source = 0;
  std::uint64_t source_index = 0;
  std::vector<std::uint64_t> stream;         // the stream's spawn key (derive.h)
  std::optional<std::uint64_t> fingerprint;  // kSample only
  // Declared skipped (LoaderOptions::skip): its step or the sample itself. The
  // loader does not deliver it.
  bool skipped = false;
};

// Steps (batches per rank) an epoch has under `query`'s options and size.
// Throws ConfigError as the DataLoader would for the same options.
std::uint64_t ledger_steps(const LedgerQuery& query);

// The entries of steps [first_step, end_step) of `epoch`, by step, rank, slot,
// narrowed to `rank` and `worker` when set. Throws ConfigError for invalid
// options, a rank outside the world, a worker outside num_workers, or steps past
// the epoch's end (naming how many it has).
std::vector<LedgerEntry> ledger(const LedgerQuery& query);
// The same entries in the same order, each handed to `emit` as it is made (the
// reference valid during the call): memory for each rank's order of the epoch,
// none for the entries, so a query of millions of steps streams (seed-audit order).
// The checks are made before the first entry.
void ledger(const LedgerQuery& query,
            const std::function<void(const LedgerEntry&)>& emit);

}  // namespace seedloader
