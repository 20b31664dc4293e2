#include "seedloader/mixture.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {
namespace {

using u128 = unsigned __int128;

constexpr std::uint64_t kNever = UINT64_MAX;

std::string point_name(const WeightPoint& p) {
  return "the weights from step " + std::to_string(p.step);
}

std::string weight_text(double w) {
  if (std::isnan(w)) return "nan";
  if (std::isinf(w)) return w > 0 ? "inf" : "-inf";
  std::string s = std::to_string(w);
  return s;
}

// Weights as proportions in units of 1 / kMixtureUnit summing to exactly it: each
// the floor of its share, the units left to the largest remainders among the
// sources of positive weight (ties: the lower number). REQUIRES: checked weights.
std::vector<std::uint64_t> to_units(const std::vector<double>& weights) {
  // Scaled by the largest first, so that the sum is finite (at most the count).
  const double largest = *std::max_element(weights.begin(), weights.end());
  double total = 0;
  for (const double w : weights) total += w / largest;
  std::vector<std::uint64_t> units(weights.size());
  std::vector<double> rest(weights.size());
  std::uint64_t given = 0;
  for (std::size_t s = 0; s < weights.size(); ++s) {
    const double exact = weights[s] / largest / total * static_cast<double>(kMixtureUnit);
    const double whole = std::floor(exact);
    units[s] = std::min(static_cast<std::uint64_t>(whole), kMixtureUnit);
    rest[s] = exact - whole;
    given += units[s];
  }
  std::vector<std::size_t> order;
  for (std::size_t s = 0; s < weights.size(); ++s)
    if (weights[s] > 0) order.push_back(s);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rest[a] > rest[b]; });
  // Rounding leaves fewer units than sources of positive weight (and none too many:
  // the floors of shares that sum to at most 1 + S ulps).
  for (std::size_t k = 0; given < kMixtureUnit; ++k) {
    ++units[order.at(k % order.size())];
    ++given;
  }
  while (given > kMixtureUnit) {  // not reached for fewer than 4096 sources
    for (std::size_t s = 0; s < units.size() && given > kMixtureUnit; ++s) {
      if (units[s] > 0) {
        --units[s];
        --given;
      }
    }
  }
  return units;
}

// The stairs of linear ramps between `given` points (see kMaxStairs): the weights
// of each stair evaluated at its first step. Convex combinations of two points
// with positive sums, so never all 0.
std::vector<WeightPoint> stairs(const std::vector<WeightPoint>& given) {
  std::vector<WeightPoint> out;
  for (std::size_t i = 0; i + 1 < given.size(); ++i) {
    const WeightPoint& a = given[i];
    const WeightPoint& b = given[i + 1];
    const std::uint64_t length = b.step - a.step;
    const std::uint64_t stair =
        std::max<std::uint64_t>(1, (length + kMaxStairs - 1) / kMaxStairs);
    for (std::uint64_t t = a.step; t < b.step; t += stair) {
      const double f = static_cast<double>(t - a.step) / static_cast<double>(length);
      WeightPoint p{t, a.weights};
      for (std::size_t s = 0; s < p.weights.size(); ++s)
        p.weights[s] = a.weights[s] + (b.weights[s] - a.weights[s]) * f;
      out.push_back(std::move(p));
      if (b.step - t <= stair) break;
    }
  }
  out.push_back(given.back());
  return out;
}

std::uint64_t floor_units(u128 t) { return static_cast<std::uint64_t>(t / kMixtureUnit); }
std::uint64_t ceil_units(u128 t) {
  return static_cast<std::uint64_t>((t + kMixtureUnit - 1) / kMixtureUnit);
}

}  // namespace

MixtureSchedule::MixtureSchedule(std::vector<std::string> sources,
                                 std::vector<WeightPoint> points, bool interpolate)
    : sources_(std::move(sources)), given_(std::move(points)), interpolate_(interpolate) {
  points_ = given_;
  if (sources_.empty()) throw ConfigError("a mixture needs at least one source");
  if (sources_.size() > 65536)
    throw ConfigError("a mixture of " + std::to_string(sources_.size()) +
                      " sources: at most 65536");
  std::set<std::string> seen;
  for (const std::string& name : sources_) {
    if (name.empty()) throw ConfigError("a mixture's source has an empty name");
    if (!seen.insert(name).second)
      throw ConfigError("the mixture names source '" + name + "' twice");
  }
  if (points_.empty()) throw ConfigError("a mixture's weights are missing");
  if (points_.front().step != 0)
    throw ConfigError("a mixture's weights must start at step 0, not at step " +
                      std::to_string(points_.front().step));
  for (std::size_t i = 0; i < points_.size(); ++i) {
    const WeightPoint& p = points_[i];
    if (i > 0 && p.step <= points_[i - 1].step)
      throw ConfigError("a mixture's weight steps must increase: step " +
                        std::to_string(p.step) + " follows step " +
                        std::to_string(points_[i - 1].step));
    if (p.weights.size() != sources_.size())
      throw ConfigError(point_name(p) + " are " + std::to_string(p.weights.size()) +
                        " for " + std::to_string(sources_.size()) + " sources");
    bool any = false;
    for (std::size_t s = 0; s < sources_.size(); ++s) {
      const double w = p.weights[s];
      if (!std::isfinite(w) || w < 0)
        throw ConfigError(point_name(p) + " give source '" + sources_[s] + "' weight " +
                          weight_text(w) + ": a weight is finite and at least 0");
      any = any || w > 0;
    }
    if (!any) throw ConfigError(point_name(p) + " are all 0: no source to draw from");
  }
  if (interpolate_) points_ = stairs(given_);
  for (const WeightPoint& p : points_) units_.push_back(to_units(p.weights));
  cumulative_.assign(points_.size(), std::vector<u128>(sources_.size(), 0));
  for (std::size_t i = 1; i < points_.size(); ++i)
    for (std::size_t s = 0; s < sources_.size(); ++s)
      cumulative_[i][s] =
          cumulative_[i - 1][s] +
          static_cast<u128>(points_[i].step - points_[i - 1].step) * units_[i - 1][s];
}

bool MixtureSchedule::same_as(const MixtureSchedule& other) const {
  if (sources_ != other.sources_ || interpolate_ != other.interpolate_ ||
      given_.size() != other.given_.size())
    return false;
  for (std::size_t i = 0; i < given_.size(); ++i)
    if (given_[i].step != other.given_[i].step ||
        given_[i].weights != other.given_[i].weights)
      return false;
  return true;
}

std::size_t MixtureSchedule::point_at(std::uint64_t step) const {
  const auto it =
      std::upper_bound(points_.begin(), points_.end(), step,
                       [](std::uint64_t s, const WeightPoint& p) { return s < p.step; });
  return static_cast<std::size_t>(it - points_.begin()) - 1;
}

std::span<const std::uint64_t> MixtureSchedule::proportions(std::uint64_t step) const {
  return units_[point_at(step)];
}

u128 MixtureSchedule::integral(std::size_t s, std::uint64_t step) const {
  const std::size_t i = point_at(step);
  return cumulative_[i][s] + static_cast<u128>(step - points_[i].step) * units_[i][s];
}

MixtureAllocation::MixtureAllocation(MixtureSchedule schedule, std::uint64_t global_batch,
                                     std::uint64_t origin,
                                     std::vector<std::uint64_t> consumed)
    : schedule_(std::move(schedule)),
      global_batch_(global_batch),
      origin_(origin),
      base_(std::move(consumed)),
      step_(origin) {
  if (global_batch_ == 0)
    throw ConfigError("a mixture's global batch size must be at least 1");
  if (base_.empty()) base_.assign(schedule_.num_sources(), 0);
  if (base_.size() != schedule_.num_sources())
    throw ConfigError("a mixture's counts at its origin are of " +
                      std::to_string(base_.size()) + " sources; it has " +
                      std::to_string(schedule_.num_sources()) + " sources");
  consumed_ = base_;
  for (std::size_t s = 0; s < base_.size(); ++s) {
    origin_integral_.push_back(schedule_.integral(s, origin_));
    base_total_ += base_[s];
  }
}

void MixtureAllocation::resume(std::uint64_t step, std::vector<std::uint64_t> consumed) {
  const auto& names = schedule_.sources();
  if (step < origin_)
    throw ConfigError("a mixture resumed at step " + std::to_string(step) +
                      ", before its allocation's origin at step " +
                      std::to_string(origin_));
  if (consumed.size() != names.size())
    throw ConfigError("a mixture resumed with counts of " +
                      std::to_string(consumed.size()) + " sources; it has " +
                      std::to_string(names.size()) + " sources");
  u128 sum = 0, want = static_cast<u128>(global_batch_) * (step - origin_);
  for (std::size_t s = 0; s < names.size(); ++s) {
    sum += consumed[s];
    want += base_[s];
    const u128 t = target(s, step);
    if (consumed[s] < floor_units(t) || consumed[s] > ceil_units(t))
      throw ConfigError("a mixture resumed at step " + std::to_string(step) + " with " +
                        std::to_string(consumed[s]) + " samples of source '" + names[s] +
                        "', which its weights put at " + std::to_string(floor_units(t)) +
                        " to " + std::to_string(ceil_units(t)) +
                        ": not this mixture's counts");
  }
  if (sum != want)
    throw ConfigError(
        "a mixture resumed at step " + std::to_string(step) + " with " +
        std::to_string(static_cast<std::uint64_t>(sum)) + " samples in all, not the " +
        std::to_string(static_cast<std::uint64_t>(want)) + " its steps hold");
  step_ = step;
  consumed_ = std::move(consumed);
}

u128 MixtureAllocation::target(std::size_t s, std::uint64_t step) const {
  return static_cast<u128>(base_[s]) * kMixtureUnit +
         static_cast<u128>(global_batch_) *
             (schedule_.integral(s, step) - origin_integral_[s]);
}

std::uint64_t MixtureAllocation::deadline(std::size_t s, std::uint64_t count,
                                          std::uint64_t after) const {
  // The first step n > after with target(s, n) >= (count + 1) units: walk the
  // schedule's segments from `after`, each adding G * units per step.
  const u128 need = static_cast<u128>(count + 1) * kMixtureUnit;
  u128 have = target(s, after);
  const auto& points = schedule_.points();
  std::uint64_t at = after;
  for (std::size_t i = schedule_.point_at(at); i < points.size(); ++i) {
    const u128 rate =
        static_cast<u128>(global_batch_) * schedule_.point_proportions(i)[s];
    const bool last = i + 1 == points.size();
    const std::uint64_t end = last ? kNever : points[i + 1].step;
    if (rate > 0) {
      const u128 steps = (need - have + rate - 1) / rate;
      if (last || steps <= end - at) return at + static_cast<std::uint64_t>(steps);
      have += rate * (end - at);
    }
    at = end;
  }
  return kNever;
}

std::vector<std::uint64_t> MixtureAllocation::next() {
  const std::size_t n = schedule_.num_sources();
  const std::uint64_t after = step_ + 1;
  std::vector<std::uint64_t> counts(n), upper(n);
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < n; ++s) {
    const u128 t = target(s, after);
    counts[s] = std::max(consumed_[s], floor_units(t));
    upper[s] = ceil_units(t);
    total += counts[s];
  }
  std::uint64_t want = 0;
  if (__builtin_mul_overflow(global_batch_, after - origin_, &want) ||
      __builtin_add_overflow(want, base_total_, &want))
    throw ConfigError("mixture allocation: step " + std::to_string(step_) +
                      " would bring the samples drawn past 2^64 - 1");
  std::vector<std::pair<std::uint64_t, std::size_t>> open;  // (deadline, source)
  for (std::size_t s = 0; s < n; ++s)
    if (counts[s] < upper[s]) open.emplace_back(deadline(s, counts[s], after), s);
  if (total > want || want - total > open.size())
    throw Error("mixture allocation: step " + std::to_string(step_) + " has no count " +
                "within one sample of every source's target (" + std::to_string(total) +
                " samples at least, " + std::to_string(want) + " to place)");
  std::sort(open.begin(), open.end());
  for (std::uint64_t k = 0; k < want - total; ++k) ++counts[open[k].second];
  std::vector<std::uint64_t> out(n);
  for (std::size_t s = 0; s < n; ++s) {
    out[s] = counts[s] - consumed_[s];
    consumed_[s] = counts[s];
  }
  step_ = after;
  return out;
}

void MixtureAllocation::advance_to(std::uint64_t step) {
  while (step_ < step) next();
}

std::uint64_t source_key(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h >> 1;
}

MixturePlan::MixturePlan(MixtureAllocation allocation, std::vector<std::uint64_t> sizes,
                         std::uint64_t seed)
    : allocation_(std::move(allocation)), sizes_(std::move(sizes)), seed_(seed) {
  const auto& names = allocation_.schedule().sources();
  if (sizes_.size() != names.size())
    throw ConfigError("a mixture of " + std::to_string(names.size()) + " sources given " +
                      std::to_string(sizes_.size()) + " sizes");
  for (std::size_t s = 0; s < names.size(); ++s) {
    if (sizes_[s] == 0)
      throw ConfigError("the mixture's source '" + names[s] + "' is empty");
    keys_.push_back(source_key(names[s]));
  }
  perms_.resize(names.size());
  for (auto& p : perms_) p.first = kNever;
}

const std::vector<std::uint64_t>& MixturePlan::permutation(std::uint32_t s,
                                                           std::uint64_t epoch) const {
  auto& [built, perm] = perms_[s];
  if (built != epoch) {
    perm.resize(sizes_[s]);
    std::iota(perm.begin(), perm.end(), std::uint64_t{0});
    Rng rng = stream_for_key(
        seed_,
        {static_cast<std::uint64_t>(StreamPurpose::kMixtureOrder), keys_[s], epoch});
    shuffle(rng, std::span<std::uint64_t>(perm));
    built = epoch;
  }
  return perm;
}

MixtureSample MixturePlan::at(std::uint32_t s, std::uint64_t q) const {
  const std::uint64_t epoch = q / sizes_[s];
  return MixtureSample{s, epoch, permutation(s, epoch)[q % sizes_[s]]};
}

std::vector<MixtureSample> MixturePlan::next() {
  const std::uint64_t step = allocation_.step();
  const std::vector<std::uint64_t> from = allocation_.consumed();
  const std::vector<std::uint64_t> counts = allocation_.next();
  std::vector<MixtureSample> batch;
  batch.reserve(allocation_.global_batch());
  for (std::uint32_t s = 0; s < counts.size(); ++s)
    for (std::uint64_t q = from[s]; q < from[s] + counts[s]; ++q)
      batch.push_back(at(s, q));
  Rng rng = stream_for_key(
      seed_, {static_cast<std::uint64_t>(StreamPurpose::kMixtureBatch), step});
  shuffle(rng, std::span<MixtureSample>(batch));
  return batch;
}

}  // namespace seedloader
