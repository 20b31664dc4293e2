// LoaderOptions: everything a DataLoader is configured with, as one typed struct.
// validate() checks it once, at construction, and throws ConfigError naming the
// offending option. A plain value type; copy it freely.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "seedloader/batch_mix.h"
#include "seedloader/sampler.h"

namespace seedloader {

class Dataset;

struct WorkerLaunch;  // data_loader.h

// Which stream a dataset's get() draws from.
enum class SeedScope {
  kWorker,  // worker stream (1, epoch, rank, worker), consumed sample after sample
  kSample,  // per-sample stream (2, epoch, index): batches identical for any W
};

// How the data set is split across ranks.
enum class Partition {
  // DistributedSampler (distributed_sampler.h): rank r takes positions r, r+W, ...
  // of the epoch's order, so which samples meet in one step depends on W.
  kStrided,
  // ElasticSampler (elastic_sampler.h): global batch g is positions [gG, (g+1)G)
  // for G = batch_size x world_size and rank r takes its r-th run of batch_size,
  // so every global batch, and with per-sample streams every byte of it, is the
  // same at any world size dividing G and any worker count. Requires
  // SeedScope::kSample; a batch mix then pairs and draws over the global batch.
  kElastic,
};

// What a DataError thrown by get() does.
enum class BadSample {
  kRaise,  // the consumer gets WorkerError (worker, sample index, message)
  kSkip,   // replaced by the next good sample (index+1, +2, ... mod N; within its
           // source for a mixture: Dataset::replacements()), counted
};

// Steps [first, end) of each of `epochs` epochs from `epoch` (a step is a batch
// number of the epoch): one epoch's range, or, with epochs > 1, the whole epochs a
// long span of global steps covers, held as one range.
struct StepRange {
  std::uint64_t epoch = 0;
  std::uint64_t first = 0;
  std::uint64_t end = 0;
  std::uint64_t epochs = 1;
  bool operator==(const StepRange&) const = default;
  bool contains(std::uint64_t e, std::uint64_t step) const {
    return e >= epoch && e - epoch < epochs && step >= first && step < end;
  }
};

// Global steps [first, end) (a global step being epoch x per_epoch + the step in
// its epoch) as at most three StepRanges: the part of the first epoch, the whole
// epochs between (one range), the part of the last; none when per_epoch is 0 or
// first >= end. Its size and cost do not depend on the span.
std::vector<StepRange> epoch_step_ranges(std::uint64_t first, std::uint64_t end,
                                         std::uint64_t per_epoch);

// Declared skips: the batches around a loss spike, samples found harmful.
// A skipped step is not delivered, and every other step is exactly as it would
// have been: its number, its samples, its worker and its streams (under
// SeedScope::kSample a skipped step is not even read; under kWorker it is read
// and dropped, so that the worker's stream reaches the next batch as before).
// A skipped sample is left out of its batch, whose other samples keep their
// places and streams; that needs SeedScope::kSample (a worker stream would
// reach the later samples in another state) and no batch mix. Samples that
// would leave a batch empty are a ConfigError when its epoch begins, naming the
// step: another rank's batch of that step may keep samples, and the ranks must
// stay in step, so skip the step instead. Indices past the data set, and steps
// past an epoch's end, skip nothing. A long span of steps is a few ranges
// (epoch_step_ranges), so a check costs the same for 10 steps as for 10^15.
struct SkipList {
  std::vector<StepRange> steps;
  std::vector<std::uint64_t> samples;
  bool empty() const { return steps.empty() && samples.empty(); }
  bool step(std::uint64_t epoch, std::uint64_t k) const {
    for (const StepRange& r : steps)
      if (r.contains(epoch, k)) return true;
    return false;
  }
};

struct LoaderOptions {
  std::uint64_t batch_size = 1;
  int num_workers = 0;  // 0: samples are read in the calling thread
  int prefetch = 2;     // batch slots per worker (per loader when num_workers = 0)
  bool shuffle = false;
  // The shuffle's generator (sampler.h): numpy's PCG64 stream, exactly
  // PyTorch's DistributedSampler / torch.randperm order, or kShards: shards in a
  // shuffled order, read whole in blocks of shuffle_block samples shuffled
  // within (the data set must report its shards, Dataset::shard_sizes()).
  ShuffleOrder order = ShuffleOrder::kNumpy;
  // kShards' block in samples; 0: four times the largest shard's sample count.
  std::uint64_t shuffle_block = 0;
  // Unset: drawn from the OS and announced; refused where world_size > 1 and the
  // order is drawn from it (each rank would shuffle its own permutation).
  std::optional<std::uint64_t> seed;
  bool drop_last = false;  // drop the last, short batch
  // Keep workers across epochs. They live as long as the thread that first
  // iterated: iterate from one thread that outlives the loader.
  bool persistent_workers = false;
  std::uint64_t rank = 0;
  std::uint64_t world_size = 1;  // > 1: the partition shards the dataset
  Partition partition = Partition::kStrided;
  // Under Partition::kElastic: the epoch's order is cut into this many contiguous
  // parts, each global batch taking G / C samples of each, so that the ranks of one
  // of N physical nodes (N dividing C, ranks numbered node by node) read only their
  // node's parts (ElasticSampler). 0: no split. Fixed for a run: another C is
  // another order. ddp-train and Python's DataLoader default to
  // default_canonical_nodes() when none is given (seed-audit, offline, to 0:
  // give it the C the run printed or saved).
  std::uint64_t canonical_nodes = 0;
  // Physical nodes the world runs on (0: unknown). With canonical_nodes it must
  // divide them, and world_size must be a multiple of it.
  std::uint64_t nodes = 0;
  // Set: each epoch's batches come from here, called once in the main process
  // when the epoch begins, instead of from the built-in samplers (shuffle and
  // world_size then play no part in the order): e.g. a user's sampler in
  // Python. Each batch holds 1 to batch_size indices below the dataset size;
  // the count of batches may differ between epochs. A batch that breaks this
  // is a ConfigError when the epoch begins, naming the epoch and the batch.
  std::function<std::vector<std::vector<std::uint64_t>>(std::uint64_t epoch)> batch_plan;
  SeedScope seeding = SeedScope::kWorker;
  BadSample on_bad_sample = BadSample::kRaise;
  // MixUp / CutMix over each batch, with soft targets (batch_mix.h); off unless
  // an alpha is set.
  BatchMix mix;
  SkipList skip;
  // A batch not delivered within this time is a TimeoutError naming the worker;
  // zero waits indefinitely (a dead worker is still detected).
  std::chrono::milliseconds timeout{0};
  // Empty: each worker is a fork of this process. Set: each worker is a new
  // program, started (fork, then exec) as this command — argv, argv[0] a path —
  // followed by WorkerLaunch::arguments(); it must build a DataLoader as this one
  // was built (the same data set and options, worker_command aside) and hand the
  // parsed arguments to DataLoader::serve_worker(). Python's
  // multiprocessing_context="spawn" runs a fresh interpreter this way. The
  // descriptors in worker_fds (close-on-exec or not) stay open across the exec,
  // beside the shared memory's own.
  std::vector<std::string> worker_command;
  std::vector<int> worker_fds;
  // Runs in a worker, in place of its exit, when its engine hands its workers
  // over (DataLoader::release_workers()): there a worker goes on serving
  // another loader's shared memory (DataLoader::serve_worker, which never
  // returns). A worker whose hand-over returns exits with code 70 (EX_SOFTWARE).
  std::function<void(int worker)> worker_handoff;
  // Set: the first start of workers adopts these processes (children of this
  // process that another engine released, forked by the thread that iterates
  // this one) as workers 0..n-1 instead of starting new ones, and
  // worker_adopt(w, launch, descriptors) tells worker w its WorkerLaunch
  // (data_loader.h), with the descriptors it names (the shared memory's files,
  // region first), which the callee passes to the worker. Later starts fork as
  // usual.
  std::vector<pid_t> adopt_workers;
  std::function<void(int worker, const WorkerLaunch& launch, const std::vector<int>& fds)>
      worker_adopt;
  // Runs in each worker after its stream is seeded: (worker id, rank), once
  // per fork (so once per epoch without persistent_workers; never when
  // num_workers = 0). Thrown exceptions are reported on the first batch that
  // worker owes.
  std::function<void(int worker, std::uint64_t rank)> worker_init;
  // Runs in the consumer's thread about every 100 ms (and after a signal) while
  // it waits for a batch from a worker (never when num_workers = 0), e.g. to
  // notice a Ctrl-C that an embedding interpreter only flags. Whatever it throws abandons
  // the epoch: the workers are killed and reaped, then the exception reaches the caller.
  std::function<void()> while_waiting;
};

// The canonical nodes of a run that names none (a sensible default, fixed for
// the run once it starts): one part per physical node where parts keep each
// node to its own shards — partition elastic, a shuffled order shards, more
// than one node known (options.nodes), dividing the world size — else 0, no
// split (which for one node is the same order as one part).
std::uint64_t default_canonical_nodes(const LoaderOptions& options);

// Throws ConfigError naming the first invalid option; dataset_size is the
// dataset's sample count.
void validate(const LoaderOptions& options, std::uint64_t dataset_size);

// The built-in sampler a DataLoader with `options` draws each epoch's order
// from over `dataset_size` samples, `seed` being its base seed:
// ElasticSampler under Partition::kElastic, else DistributedSampler when
// world_size > 1, else RandomSampler with shuffle, else SequentialSampler
// (batch_plan plays no part). `shard_sizes` (Dataset::shard_sizes()) is what
// ShuffleOrder::kShards keeps together; without them that order's indices() is
// a ConfigError (its size() is still right).
std::unique_ptr<Sampler> make_sampler(std::uint64_t dataset_size,
                                      const LoaderOptions& options, std::uint64_t seed,
                                      std::vector<std::uint64_t> shard_sizes = {});

// The sampler a DataLoader over `data` with `options` (validated) and base seed
// `seed` draws each epoch's order from; the loader decides it here, not the data
// set: for a mixture (data.mixture()) its MixtureSampler, which throws
// ConfigError for a batch plan and for Partition::kStrided over more than one
// rank; for any other data set make_sampler() over its size, with its
// shard_sizes() under ShuffleOrder::kShards.
std::unique_ptr<Sampler> loader_sampler(const Dataset& data, const LoaderOptions& options,
                                        std::uint64_t seed);

}  // namespace seedloader
