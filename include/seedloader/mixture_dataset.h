// MixtureDataset: several data sets read as one by a DataLoader, in global batches
// composed by weight on a schedule (mixture.h). Its indices are the sources' laid
// end to end (source s's sample i is offset(s) + i), and a loader reads it in
// the mixture's order, a MixtureSampler (Dataset::mixture() names the mixture, and
// loader_sampler() in loader_options.h builds the sampler), so every loader option
// that concerns what a rank reads next works as for one data set: workers,
// seeding, rank and world size, skips, timeouts.
//
// The order. With G = batch_size x world_size, loader epoch e is the mixture's
// global steps [eK, (e+1)K), K = ceil(samples_per_epoch / G): every step is a
// whole global batch (drop_last plays no part), and rank r reads positions
// [r * batch_size, (r + 1) * batch_size) of each, as under Partition::kElastic.
// So the global batches are the same at every world size dividing G, and the
// sources' positions carry over from one loader epoch to the next. shuffle and
// order play no part (ShuffleOrder::kShards is refused: a mixture is not stored in
// shards); a source is always read through its own permutations.
//
// The streams. Under SeedScope::kSample, sample i of source s in that source's
// epoch f draws from mixture_sample_stream(seed, source_key(name), f, i)
// (derive.h): the same bytes whatever the weights, the step it lands in, the
// world size or the worker count.
//
// Changing the weights of a running job. The mixture's history is a list of
// segments, each a schedule taking over at a global step with each of its
// sources' consumed counts there: the steps before a segment's first keep the
// composition they had, the segment's weights apply from there on (its targets
// are those counts plus its weights' integral: mixture.h), and every source
// continues from its own position. A segment may add sources (a source new at
// a segment starts at its epoch 0: its count there is 0) and give a weight of
// 0 (a paused source keeps its position); the last segment's sources are the
// mixture's, and no source of an earlier one may be left out of it.
//
// Not supported, each a ConfigError naming it (loader_sampler() refuses them): a
// batch plan (a user's sampler), Partition::kStrided over more than one rank.
// Under BadSample::kSkip a bad sample is replaced from its own source
// (replacements()); a batch mix pairs a rank's first sample with the one before
// it in the global batch (partners()), so mixed batches are the same at every
// world size.
// Immutable after construction; get() is as safe across processes as the
// sources' get().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/mixture.h"
#include "seedloader/sampler.h"

namespace seedloader {

struct MixtureSource {
  std::string name;
  std::shared_ptr<const Dataset> dataset;
};

// The counts of the mixture's sources (in its order) after `step` global steps, as
// a saved state records them: an order computed from there does not advance the
// allocation from the start of the segment in force.
struct MixturePoint {
  std::uint64_t step = 0;
  std::vector<std::uint64_t> consumed;
};

class MixtureDataset : public Dataset {
 public:
  // The sources in the schedule's order (their names must be the schedule's).
  // Throws ConfigError naming the source: names that are not the schedule's, a
  // missing or empty data set, a layout that differs from the first source's
  // (naming both sources), or samples_per_epoch 0. samples_per_epoch unset: the
  // sum of the sources' sizes.
  MixtureDataset(std::vector<MixtureSource> sources, MixtureSchedule schedule,
                 std::optional<std::uint64_t> samples_per_epoch = std::nullopt);
  // The same with a history: segments in order of their steps, the first from
  // step 0 with nothing consumed, the last's schedule naming `sources` in their
  // order. Throws ConfigError naming the segment (by its step) and the source:
  // steps not increasing, counts of another length than the segment's sources,
  // a source of an earlier segment missing from a later one, a source unknown
  // to the mixture.
  // `known`: points whose counts a saved state gives (see MixturePoint); counts
  // that are not the history's are a ConfigError when an order uses them.
  MixtureDataset(std::vector<MixtureSource> sources, std::vector<MixtureSegment> history,
                 std::optional<std::uint64_t> samples_per_epoch = std::nullopt,
                 std::vector<MixturePoint> known = {});

  std::uint64_t size() const override { return offsets_.back(); }
  const SampleLayout& layout() const override { return sources_[0].dataset->layout(); }
  // Source s's get() for its sample; a DataError from it is given the source's
  // name first.
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;
  void will_read(std::span<const std::uint64_t> indices) const noexcept override;
  std::uint64_t read_ahead() const override;
  Rng sample_rng(std::uint64_t base_seed, std::uint64_t epoch,
                 std::uint64_t index) const override;
  // The sample's own source: a replacement never comes from another.
  Neighbours replacements(std::uint64_t index) const override;
  const MixtureDataset* mixture() const override { return this; }

  // The schedule in force now: the last segment's.
  const MixtureSchedule& schedule() const { return history_.back().schedule; }
  const std::vector<MixtureSegment>& history() const { return history_; }
  const std::vector<MixturePoint>& known() const { return known_; }
  const std::vector<MixtureSource>& sources() const { return sources_; }
  std::uint64_t samples_per_epoch() const { return samples_per_epoch_; }
  // Source s's first index.
  std::uint64_t offset(std::size_t s) const { return offsets_[s]; }
  // (source, index within it) of index `index`. REQUIRES: index < size().
  std::pair<std::uint32_t, std::uint64_t> locate(std::uint64_t index) const;

 private:
  std::vector<MixtureSource> sources_;
  std::vector<MixtureSegment> history_;
  std::vector<MixturePoint> known_;
  std::vector<std::uint64_t> offsets_;  // per source, then the total
  std::vector<std::uint64_t> keys_;     // source_key() of each name
  std::uint64_t samples_per_epoch_;
};

class MixtureSampler;

// A mixture loader's position as a saved state holds it: the global step, the
// first step of its epoch, each source's count at both, the sources' sizes and the
// history of schedules the step was reached under. As JSON (state_dict()["mixture"],
// ddp-train's checkpoint metadata "mixture"): mixture_state_json.h. The save and the
// resume below are loader/mixture_state.cc.
struct MixtureState {
  std::uint64_t step = 0;
  std::uint64_t epoch_first_step = 0;
  std::uint64_t samples_per_epoch = 0;
  std::vector<std::string> names;  // the sources, in the mixture's order
  std::vector<std::uint64_t> sizes, consumed, epoch_first_counts;  // per source
  std::vector<MixtureSegment> history;
};

// The state of a loader over `mixture` with global batch G and base seed `seed`
// whose epoch began at global step `epoch_first_step` and that has taken the steps
// before `step`.
MixtureState mixture_state(const MixtureDataset& mixture, std::uint64_t global_batch,
                           std::uint64_t seed, std::uint64_t epoch_first_step,
                           std::uint64_t step);
// The same through `order` (whose shape is the mixture's: its sources, sizes,
// history and samples_per_epoch), which goes on from the step it last computed: a
// run that saves again and again keeps one.
MixtureState mixture_state(const MixtureSampler& order, std::uint64_t epoch_first_step,
                           std::uint64_t step);

// What a mixture continuing from a saved state is built with: its history and the
// counts the state gives (MixtureDataset's and MixtureSampler's `known`).
struct MixtureResume {
  std::vector<MixtureSegment> history;
  std::vector<MixturePoint> known;
};

// The mixture `order` computes (this run's: its sources, sizes, weights — its last
// schedule —, samples_per_epoch and global batch) continuing from `saved`: the
// saved history, and, when the weights differ from the saved last schedule's, a
// new segment from the saved step with each source's saved count (0 for a source
// new here), with the saved counts as known points. So the saved steps keep their
// composition and every source continues from its own position. Throws
// ConfigError naming both values for another samples_per_epoch, a saved source
// missing or of another size, a position no epoch has
// (MixtureSampler::check_position: checked first, so a resume costs at most an
// epoch's steps at any step), an epoch_first_step that is not `epoch`'s first
// step (when the state names its epoch), counts that are not the saved history's
// at the saved step, and as MixtureSampler does for a history that does not
// belong together (checked here, with the order's G).
MixtureResume resumed_history(const MixtureSampler& order, const MixtureState& saved,
                              std::optional<std::uint64_t> epoch = std::nullopt);

// `mixture` (as built for this run) continuing from `saved` (resumed_history, with
// global batch G and base seed `seed`), as a data set.
MixtureDataset resumed_mixture(const MixtureDataset& mixture, const MixtureState& saved,
                               std::uint64_t global_batch, std::uint64_t seed);

// Index `index` of the mixture `saved` was taken of (its sources' names and sizes,
// in its order) as an index of `mixture`, or of the mixture `order` computes: the
// same source's same sample, wherever that source sits now (a resume may add
// sources). Throws ConfigError for an index past the saved sources or a source the
// mixture does not hold.
std::uint64_t moved_index(const MixtureState& saved, const MixtureDataset& mixture,
                          std::uint64_t index);
std::uint64_t moved_index(const MixtureState& saved, const MixtureSampler& order,
                          std::uint64_t index);

// ConfigError unless `history` is a mixture's over sources `names` (see
// MixtureDataset's constructor).
void check_mixture_history(const std::vector<std::string>& names,
                           const std::vector<MixtureSegment>& history);

// The order of a MixtureDataset for one rank (see above). Each epoch is computed
// from the history: the allocation of the segment in force is advanced to the
// epoch's first step (a tenth of a microsecond a step) from the latest step before
// it whose counts are known — the segment's first, a known point, or the first
// or last step of the epoch computed last — and each source's permutation is built for
// the source epochs the epoch reads. So a run that goes epoch after epoch, or resumes
// from a state holding its epoch's first counts, costs one epoch's steps per epoch, at
// step 10 as at step 10^9; consumed_at() likewise goes on from the step it was
// asked last. Not thread-safe (it remembers what it computed).
class MixtureSampler : public Sampler {
 public:
  // Throws ConfigError for a batch size or world size of 0 or a rank outside it,
  // or a history whose counts are not whole global batches; and for a global
  // batch G or an epoch of K = ceil(samples_per_epoch / G) global batches whose
  // samples (K x G) pass 2^64 - 1. Every step it computes or counts to is checked
  // the same way: a step whose samples before it would pass 2^64 - 1 is a
  // ConfigError, not a count that wraps.
  MixtureSampler(const MixtureDataset& mixture, std::uint64_t batch_size,
                 std::uint64_t world_size, std::uint64_t rank, std::uint64_t seed);
  // The same from the mixture's shape alone: its sources' names and sizes (in
  // the last schedule's order), its history and its epoch's length; throws
  // ConfigError as MixtureDataset's constructor does for the history.
  MixtureSampler(std::vector<std::string> names, std::vector<std::uint64_t> sizes,
                 std::vector<MixtureSegment> history, std::uint64_t samples_per_epoch,
                 std::uint64_t batch_size, std::uint64_t world_size, std::uint64_t rank,
                 std::uint64_t seed, std::vector<MixturePoint> known = {});

  // steps_per_epoch() x batch_size.
  std::uint64_t size() const override { return steps_ * batch_size_; }
  std::uint64_t steps_per_epoch() const { return steps_; }
  std::vector<Index> indices(std::uint64_t epoch) const override;
  EpochOrder order(std::uint64_t epoch) const override;
  // Per step of `epoch`, the sample before this rank's first (Sampler::partners).
  EpochOrder partners(std::uint64_t epoch) const override;
  // The whole of global step `step` (every rank's samples, in order); their
  // `source` numbers the mixture's sources.
  std::vector<MixtureSample> global_batch(std::uint64_t step) const;
  // The mixture's shape, as given: its sources (the last schedule's, in order),
  // their sizes, its history, its epoch's samples; and batch_size x world_size.
  const std::vector<std::string>& names() const {
    return history_.back().schedule.sources();
  }
  const std::vector<std::uint64_t>& sizes() const { return sizes_; }
  const std::vector<MixtureSegment>& history() const { return history_; }
  std::uint64_t samples_per_epoch() const { return samples_per_epoch_; }
  std::uint64_t global_batch_size() const { return global_; }
  std::uint64_t seed() const { return seed_; }
  // Source s's first index. REQUIRES: s < names().size().
  std::uint64_t offset(std::size_t s) const { return offsets_[s]; }
  // Each of the mixture's sources' samples in the steps before `step`.
  std::vector<std::uint64_t> consumed_at(std::uint64_t step) const;
  // ConfigError unless (epoch_first_step, step) is a position a loader saves: an
  // epoch's first step (a multiple of steps_per_epoch()) and a step at most an
  // epoch after it, its samples within 2^64 - 1. So a saved position whose counts
  // consumed_at() checks costs at most an epoch's steps, whatever the step.
  void check_position(std::uint64_t epoch_first_step, std::uint64_t step) const;

 private:
  // Global steps [from, from + count), whole, their sources the mixture's.
  std::vector<std::vector<MixtureSample>> steps(std::uint64_t from,
                                                std::uint64_t count) const;
  // Global step `step` of `epoch` (epoch x steps_per_epoch() + step); ConfigError
  // when the samples before it pass 2^64 - 1.
  std::uint64_t checked_step(std::uint64_t epoch, std::uint64_t step) const;
  // The segment in force at `step`.
  std::size_t segment_at(std::uint64_t step) const;
  // Segment i's allocation, from its first step.
  MixtureAllocation allocation(std::size_t i) const;
  // Segment i's allocation at the latest known step in [its first step, step].
  MixtureAllocation allocation_near(std::size_t i, std::uint64_t step) const;
  // Remembers the counts the allocation of segment i reached, in slot 0 (the first
  // step of the steps computed last), 1 (their end) or 2 (the last consumed_at()).
  void remember(std::size_t i, const MixtureAllocation& reached, std::size_t slot) const;
  // ConfigError unless segment i + 1's counts are those segment i's allocation
  // reaches at its step.
  void check_boundary(std::size_t i, const MixtureAllocation& reached) const;

  std::vector<MixtureSegment> history_;
  std::vector<std::vector<std::uint32_t>> to_mixture_;  // per segment, per its source
  // The points given, then the three remembered (empty counts: none yet).
  mutable std::vector<MixturePoint> known_;
  std::size_t given_ = 0;
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> offsets_;
  std::uint64_t batch_size_;
  std::uint64_t global_;
  std::uint64_t rank_;
  std::uint64_t seed_;
  std::uint64_t samples_per_epoch_;
  std::uint64_t steps_;
};

}  // namespace seedloader
