// Mixtures: global batches drawn from several sources by weight, the weights on a
// schedule of global steps. Pure functions of (sources, schedule, global batch size
// G, seed), so every rank, worker and world size dividing G computes the same.
//
// Composition. Source s's proportion at step t is its weight over the weights' sum
// at the schedule point in force (piecewise constant, or in stairs of a linear ramp
// with interpolation: see kMaxStairs), rounded to a multiple of
// 2^-40 (the proportions of a step sum to exactly 1; integer arithmetic from there
// on, so the allocation is the same on every machine). Its target after g steps
// (steps [0, g)) is T_s(g) = c_s + G * sum_{t in [origin, g)} p_s(t), from the
// counts c_s at the allocation's origin (0 for a fresh run). The count C_s(g) of
// its samples in steps [0, g) satisfies, after every step:
//   sum_s C_s(g) = G * g;   C_s(g) >= C_s(g - 1);   |C_s(g) - T_s(g)| < 1.
// Step g gives each source the least count the last two bounds allow, then the
// samples left to those whose count may still rise by one, earliest deadline first:
// the source whose lower bound would rise soonest under the schedule (ties: the
// lower source number). Unit samples with a release and a deadline are scheduled
// by earliest deadline whenever any order can meet the deadlines, and one can here
// (the chairman assignment problem: Tijdeman, 1973/1980), so no step is left
// without a choice; the allocation checks it and throws an Error if not.
// A step's choice depends only on the counts before it and the schedule, so a run
// resumed from saved counts (resume()) continues exactly. New weights at a resume
// start a new allocation whose origin is the resume step and the counts saved
// there: targets from then on are those counts plus the new weights' integral.
//
// Order. Source s is read through its own epochs: position q of its stream is
// index perm(q / size_s)[q % size_s], perm(e) the permutation of [0, size_s) by the
// stream (4, source_key(name), e) of the seed (numpy:
// PCG64(SeedSequence(seed, spawn_key=(4, key, e))).permutation(size)). So a small
// source cycles while a large one is read once, and no sample of a source repeats
// within one of its epochs. Global batch g holds, of each source, its stream
// positions [C_s(g), C_s(g + 1)), in an order shuffled by the stream (5, g).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace seedloader {

// Weights from global step `step` on: one per source, finite, >= 0, not all 0.
struct WeightPoint {
  std::uint64_t step = 0;
  std::vector<double> weights;
};

// Proportions are multiples of 1 / kMixtureUnit.
inline constexpr std::uint64_t kMixtureUnit = std::uint64_t{1} << 40;

// With `interpolate`, the weights between two points change linearly: from point a
// to point b, the weights at step t are a's + (b's - a's) x (t - a.step) /
// (b.step - a.step), held for a stair of ceil((b.step - a.step) / 4096) steps from
// each stair's first step (one step per stair when the points are at most 4096
// steps apart), so a ramp is exact per step up to 4096 steps and at most 4096
// stairs beyond; after the last point its weights hold.
inline constexpr std::uint64_t kMaxStairs = 4096;

class MixtureSchedule {
 public:
  // Throws ConfigError naming the problem, the point (by its step) and the source:
  // no sources or more than 65536, an empty or repeated source name, no points, a
  // first point after
  // step 0, steps not increasing, a weight list of another length than the sources,
  // a weight that is negative or not finite, or a point whose weights are all 0.
  MixtureSchedule(std::vector<std::string> sources, std::vector<WeightPoint> points,
                  bool interpolate = false);

  const std::vector<std::string>& sources() const { return sources_; }
  std::size_t num_sources() const { return sources_.size(); }
  // The points the weights change at: the given ones, or with interpolation
  // every stair's.
  const std::vector<WeightPoint>& points() const { return points_; }
  // The points as given, and whether the schedule interpolates between them.
  const std::vector<WeightPoint>& given_points() const { return given_; }
  bool interpolated() const { return interpolate_; }
  // The same schedule: sources, given points and interpolation.
  bool same_as(const MixtureSchedule& other) const;

  // The proportions at `step`, in units of 1 / kMixtureUnit (they sum to it).
  std::span<const std::uint64_t> proportions(std::uint64_t step) const;
  // The proportions of points()[i].
  std::span<const std::uint64_t> point_proportions(std::size_t i) const {
    return units_[i];
  }
  // The index into points() of the point in force at `step`.
  std::size_t point_at(std::uint64_t step) const;
  // sum over t in [0, step) of source s's proportion, in units.
  unsigned __int128 integral(std::size_t s, std::uint64_t step) const;

 private:
  std::vector<std::string> sources_;
  std::vector<WeightPoint> given_;
  bool interpolate_ = false;
  std::vector<WeightPoint> points_;
  std::vector<std::vector<std::uint64_t>> units_;           // per point, per source
  std::vector<std::vector<unsigned __int128>> cumulative_;  // integral() at each point
};

// A schedule in force from global step `from_step` on, its sources having had
// `consumed` samples before it (one count per source of `schedule`; empty: none):
// one segment of a mixture's history (mixture_dataset.h).
struct MixtureSegment {
  std::uint64_t from_step = 0;
  MixtureSchedule schedule;
  std::vector<std::uint64_t> consumed;
};

// The composition of global batches of G samples, step after step.
class MixtureAllocation {
 public:
  // Allocates from global step `origin`, the sources having had `consumed` samples
  // before it (empty: none), targets counted from there. Throws ConfigError when G
  // is 0 or `consumed` has another length than the sources.
  MixtureAllocation(MixtureSchedule schedule, std::uint64_t global_batch,
                    std::uint64_t origin = 0, std::vector<std::uint64_t> consumed = {});

  // Continues at `step` with the counts this allocation had there (a saved state):
  // the steps from there are those an uninterrupted allocation makes. Throws
  // ConfigError naming the source when `step` is before the origin, or the counts
  // are not within one of the targets or do not sum to the samples of the steps.
  // Counts that pass those checks but are not this allocation's may leave a later
  // step without a choice (an Error then): give only counts it saved.
  void resume(std::uint64_t step, std::vector<std::uint64_t> consumed);

  const MixtureSchedule& schedule() const { return schedule_; }
  std::uint64_t global_batch() const { return global_batch_; }
  // The next step to allocate, and each source's samples in the steps before it.
  std::uint64_t step() const { return step_; }
  const std::vector<std::uint64_t>& consumed() const { return consumed_; }

  // Each source's samples in step step() (they sum to G); then moves to the next.
  std::vector<std::uint64_t> next();
  // Allocates the steps up to `step` (none when it is not ahead). A step costs
  // O(S log S) and searches of the schedule's points, plus a walk over the points
  // ahead for a source whose weight is 0 until then; tenths of a microsecond for a
  // few sources (bench/mixture_bench).
  void advance_to(std::uint64_t step);

 private:
  // Source s's target after `step` steps, in units of 1 / kMixtureUnit.
  unsigned __int128 target(std::size_t s, std::uint64_t step) const;
  // The least n > after at which target(s, n) reaches count + 1 samples.
  std::uint64_t deadline(std::size_t s, std::uint64_t count, std::uint64_t after) const;

  MixtureSchedule schedule_;
  std::uint64_t global_batch_;
  std::uint64_t origin_;
  std::vector<std::uint64_t> base_;  // counts at origin_
  std::uint64_t base_total_ = 0;
  std::vector<unsigned __int128> origin_integral_;  // schedule_.integral(s, origin_)
  std::uint64_t step_;
  std::vector<std::uint64_t> consumed_;
};

// One sample of a mixture's global batch: its source, the source's epoch, and its
// index within the source.
struct MixtureSample {
  std::uint32_t source = 0;
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;
  bool operator==(const MixtureSample&) const = default;
};

// The spawn-key element that stands for a source's name: FNV-1a (64 bit) of its
// bytes, shifted right by one so that it fits numpy's non-negative keys as one
// int below 2^63.
std::uint64_t source_key(const std::string& name);

// Global batches of a mixture over sources of the given sizes. Holds one epoch's
// permutation per source (8 bytes a sample), built again as the source's epoch
// changes.
class MixturePlan {
 public:
  // Throws ConfigError when `sizes` has another length than the schedule's sources
  // or a size is 0 (naming the source).
  MixturePlan(MixtureAllocation allocation, std::vector<std::uint64_t> sizes,
              std::uint64_t seed);

  // Global batch allocation().step(), in its shuffled order; then moves to the next.
  std::vector<MixtureSample> next();
  const MixtureAllocation& allocation() const { return allocation_; }

  // Position q of source s's stream: its epoch and index.
  MixtureSample at(std::uint32_t s, std::uint64_t q) const;

 private:
  const std::vector<std::uint64_t>& permutation(std::uint32_t s,
                                                std::uint64_t epoch) const;

  MixtureAllocation allocation_;
  std::vector<std::uint64_t> sizes_;
  std::uint64_t seed_;
  std::vector<std::uint64_t> keys_;  // source_key of each source
  // The last permutation built per source, with its epoch.
  mutable std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>> perms_;
};

}  // namespace seedloader
