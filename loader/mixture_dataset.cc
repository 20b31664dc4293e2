#include "seedloader/mixture_dataset.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "seedloader/batch_sampler.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {

std::string shape_text(const FieldSpec& f) {
  std::string out = std::string(dtype_name(f.dtype)) + "[";
  for (std::size_t d = 0; d < f.shape.size(); ++d)
    out += (d ? "," : "") + std::to_string(f.shape[d]);
  return out + "]" + (f.variable ? " variable" : "");
}

// Why layout `b` is not `a`, or "" when they are the same.
std::string layout_difference(const SampleLayout& a, const SampleLayout& b) {
  for (std::size_t f = 0; f < std::max(a.num_fields(), b.num_fields()); ++f) {
    if (f >= a.num_fields()) return "has the extra field '" + b.field(f).name + "'";
    if (f >= b.num_fields()) return "lacks the field '" + a.field(f).name + "'";
    const FieldSpec& x = a.field(f);
    const FieldSpec& y = b.field(f);
    if (x.name != y.name)
      return "has field '" + y.name + "' where the other has '" + x.name + "'";
    if (x.dtype != y.dtype || x.shape != y.shape || x.variable != y.variable)
      return "has field '" + y.name + "' as " + shape_text(y) + ", the other as " +
             shape_text(x);
  }
  return "";
}

}  // namespace

MixtureDataset::MixtureDataset(std::vector<MixtureSource> sources,
                               MixtureSchedule schedule,
                               std::optional<std::uint64_t> samples_per_epoch)
    : MixtureDataset(std::move(sources), {MixtureSegment{0, std::move(schedule), {}}},
                     samples_per_epoch) {}

MixtureDataset::MixtureDataset(std::vector<MixtureSource> sources,
                               std::vector<MixtureSegment> history,
                               std::optional<std::uint64_t> samples_per_epoch,
                               std::vector<MixturePoint> known)
    : sources_(std::move(sources)),
      history_(std::move(history)),
      known_(std::move(known)) {
  if (history_.empty()) throw ConfigError("a mixture needs a schedule");
  const std::vector<std::string>& names = schedule().sources();
  if (sources_.size() != names.size())
    throw ConfigError("a mixture of " + std::to_string(sources_.size()) +
                      " sources has a schedule of " + std::to_string(names.size()));
  offsets_.push_back(0);
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    const MixtureSource& src = sources_[s];
    if (src.name != names[s])
      throw ConfigError("the mixture's source " + std::to_string(s) + " is named '" +
                        src.name + "' but the schedule's is '" + names[s] + "'");
    if (!src.dataset)
      throw ConfigError("the mixture's source '" + src.name + "' is null");
    if (src.dataset->size() == 0)
      throw ConfigError("the mixture's source '" + src.name + "' (" +
                        src.dataset->describe() + ") is empty");
    const std::string diff =
        layout_difference(sources_[0].dataset->layout(), src.dataset->layout());
    if (!diff.empty())
      throw ConfigError("the mixture's sources must have one layout: '" + src.name +
                        "' (" + src.dataset->describe() + ") " + diff + " ('" +
                        sources_[0].name + "', " + sources_[0].dataset->describe() + ")");
    offsets_.push_back(offsets_.back() + src.dataset->size());
    keys_.push_back(source_key(src.name));
  }
  check_mixture_history(names, history_);
  samples_per_epoch_ = samples_per_epoch.value_or(offsets_.back());
  if (samples_per_epoch_ == 0)
    throw ConfigError("a mixture's samples_per_epoch must be > 0");
}

void check_mixture_history(const std::vector<std::string>& names,
                           const std::vector<MixtureSegment>& history) {
  if (history.empty()) throw ConfigError("a mixture needs a schedule");
  if (history.back().schedule.sources() != names)
    throw ConfigError("the mixture's last schedule does not name its sources in order");
  for (std::size_t i = 0; i < history.size(); ++i) {
    const MixtureSegment& seg = history[i];
    const std::string where =
        "the mixture's schedule from step " + std::to_string(seg.from_step);
    if (i == 0 && seg.from_step != 0)
      throw ConfigError("the mixture's first schedule starts at step " +
                        std::to_string(seg.from_step) + ", not 0");
    if (i > 0 && seg.from_step <= history[i - 1].from_step)
      throw ConfigError(where + " does not come after the one from step " +
                        std::to_string(history[i - 1].from_step));
    if (!seg.consumed.empty() && seg.consumed.size() != seg.schedule.num_sources())
      throw ConfigError(where + " has " + std::to_string(seg.consumed.size()) +
                        " counts for " + std::to_string(seg.schedule.num_sources()) +
                        " sources");
    for (const std::string& name : seg.schedule.sources())
      if (std::find(names.begin(), names.end(), name) == names.end())
        throw ConfigError(where + " reads the source '" + name +
                          "', which the mixture no longer has; give it a weight of 0 "
                          "to pause it instead");
  }
}

std::pair<std::uint32_t, std::uint64_t> MixtureDataset::locate(
    std::uint64_t index) const {
  const auto s = static_cast<std::uint32_t>(
      std::upper_bound(offsets_.begin(), offsets_.end(), index) - offsets_.begin() - 1);
  return {s, index - offsets_[s]};
}

void MixtureDataset::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  if (index >= size())
    throw DataError(describe() + ": sample " + std::to_string(index) + " is past its " +
                    std::to_string(size()) + " samples");
  const auto [s, local] = locate(index);
  try {
    sources_[s].dataset->get(local, rng, out);
  } catch (const DataError& e) {
    throw DataError("mixture source '" + sources_[s].name + "': " + e.what());
  }
}

std::string MixtureDataset::describe() const {
  std::string out = "Mixture(";
  for (std::size_t s = 0; s < sources_.size(); ++s)
    out += (s ? ", " : "") + sources_[s].name + ": " + sources_[s].dataset->describe();
  return out + ")";
}

void MixtureDataset::will_read(std::span<const std::uint64_t> indices) const noexcept {
  std::vector<std::uint64_t> local;
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    if (sources_[s].dataset->read_ahead() == 0) continue;
    local.clear();
    for (const std::uint64_t i : indices)
      if (i >= offsets_[s] && i < offsets_[s + 1]) local.push_back(i - offsets_[s]);
    if (!local.empty()) sources_[s].dataset->will_read(local);
  }
}

std::uint64_t MixtureDataset::read_ahead() const {
  std::uint64_t most = 0;
  for (const MixtureSource& s : sources_) most = std::max(most, s.dataset->read_ahead());
  return most;
}

Rng MixtureDataset::sample_rng(std::uint64_t base_seed, std::uint64_t epoch,
                               std::uint64_t index) const {
  const auto [s, local] = locate(index);
  return mixture_sample_stream(base_seed, keys_[s], epoch, local);
}

Dataset::Neighbours MixtureDataset::replacements(std::uint64_t index) const {
  const std::uint32_t s = locate(index).first;
  return {offsets_[s], offsets_[s + 1] - offsets_[s]};
}

namespace {

std::vector<std::string> source_names(const MixtureDataset& mixture) {
  std::vector<std::string> out;
  for (const MixtureSource& s : mixture.sources()) out.push_back(s.name);
  return out;
}

std::vector<std::uint64_t> source_sizes(const MixtureDataset& mixture) {
  std::vector<std::uint64_t> out;
  for (const MixtureSource& s : mixture.sources()) out.push_back(s.dataset->size());
  return out;
}

}  // namespace

MixtureSampler::MixtureSampler(const MixtureDataset& mixture, std::uint64_t batch_size,
                               std::uint64_t world_size, std::uint64_t rank,
                               std::uint64_t seed)
    : MixtureSampler(source_names(mixture), source_sizes(mixture), mixture.history(),
                     mixture.samples_per_epoch(), batch_size, world_size, rank, seed,
                     mixture.known()) {}

MixtureSampler::MixtureSampler(std::vector<std::string> names,
                               std::vector<std::uint64_t> sizes,
                               std::vector<MixtureSegment> history,
                               std::uint64_t samples_per_epoch, std::uint64_t batch_size,
                               std::uint64_t world_size, std::uint64_t rank,
                               std::uint64_t seed, std::vector<MixturePoint> known)
    : history_(std::move(history)),
      sizes_(std::move(sizes)),
      batch_size_(batch_size),
      global_(0),
      rank_(rank),
      seed_(seed),
      samples_per_epoch_(samples_per_epoch) {
  if (batch_size == 0 || world_size == 0 || rank >= world_size)
    throw ConfigError(
        "a mixture's order needs batch_size and world_size > 0 and rank < " +
        std::string("world_size (got ") + std::to_string(batch_size) + ", " +
        std::to_string(world_size) + ", rank " + std::to_string(rank) + ")");
  if (__builtin_mul_overflow(batch_size, world_size, &global_))
    throw ConfigError("a mixture's global batch of " + std::to_string(batch_size) +
                      " x " + std::to_string(world_size) + " samples is past 2^64 - 1");
  if (sizes_.size() != names.size())
    throw ConfigError("a mixture of " + std::to_string(names.size()) + " sources given " +
                      std::to_string(sizes_.size()) + " sizes");
  if (samples_per_epoch == 0)
    throw ConfigError("a mixture's samples_per_epoch must be > 0");
  check_mixture_history(names, history_);
  offsets_.push_back(0);
  for (const std::uint64_t n : sizes_) offsets_.push_back(offsets_.back() + n);
  for (const MixtureSegment& seg : history_) {
    auto& map = to_mixture_.emplace_back();
    for (const std::string& name : seg.schedule.sources())
      map.push_back(static_cast<std::uint32_t>(
          std::find(names.begin(), names.end(), name) - names.begin()));
    std::uint64_t total = 0, want = 0;
    bool overflow = __builtin_mul_overflow(global_, seg.from_step, &want);
    for (const std::uint64_t c : seg.consumed)
      overflow = __builtin_add_overflow(total, c, &total) || overflow;
    if (overflow)
      throw ConfigError("the mixture's schedule from step " +
                        std::to_string(seg.from_step) +
                        " starts after more than 2^64 - 1 "
                        "samples (global batches of " +
                        std::to_string(global_) + ")");
    if (total != want)
      throw ConfigError(
          "the mixture's schedule from step " + std::to_string(seg.from_step) +
          " starts after " + std::to_string(total) + " samples, which is not " +
          std::to_string(seg.from_step) + " global batches of " +
          std::to_string(global_) +
          " (batch_size x world_size): was it saved with another global batch?");
  }
  for (const MixturePoint& p : known) {
    if (p.consumed.size() != sizes_.size())
      throw ConfigError("a mixture's counts at step " + std::to_string(p.step) + " are " +
                        std::to_string(p.consumed.size()) + " for " +
                        std::to_string(sizes_.size()) + " sources");
  }
  known_ = std::move(known);
  given_ = known_.size();
  known_.resize(given_ + 3);  // remember()'s slots
  // Whole global batches, and the epoch's samples must count in 64 bits.
  steps_ = batches_per_epoch({.samples = samples_per_epoch, .batch_size = global_});
  std::uint64_t padded = 0;
  if (__builtin_mul_overflow(steps_, global_, &padded))
    throw ConfigError("a mixture's samples_per_epoch " +
                      std::to_string(samples_per_epoch) + " makes epochs of " +
                      std::to_string(steps_) + " global batches of " +
                      std::to_string(global_) +
                      ", more than 2^64 - 1 samples: give a smaller samples_per_epoch");
}

std::uint64_t MixtureSampler::checked_step(std::uint64_t epoch,
                                           std::uint64_t step) const {
  std::uint64_t at = 0, samples = 0;
  const bool wraps =
      __builtin_mul_overflow(epoch, steps_, &at) || __builtin_add_overflow(at, step, &at);
  if (wraps || __builtin_mul_overflow(at, global_, &samples))
    throw ConfigError((wraps ? "step " + std::to_string(step) +
                                   " of the mixture's epoch " + std::to_string(epoch)
                             : "the mixture's global step " + std::to_string(at)) +
                      " (epochs of " + std::to_string(steps_) + " global batches of " +
                      std::to_string(global_) +
                      ") comes after more than 2^64 - 1 samples");
  return at;
}

void MixtureSampler::check_position(std::uint64_t epoch_first_step,
                                    std::uint64_t step) const {
  std::uint64_t samples = 0;
  if (epoch_first_step % steps_ != 0 || step < epoch_first_step ||
      step - epoch_first_step > steps_ || __builtin_mul_overflow(step, global_, &samples))
    throw ConfigError("a mixture's position at global step " + std::to_string(step) +
                      " in the epoch from step " + std::to_string(epoch_first_step) +
                      " is not one of its epochs of " + std::to_string(steps_) +
                      " global batches of " + std::to_string(global_) +
                      " (an epoch's first step is a multiple of that, its position at "
                      "most that many steps after it, and the samples before it at most "
                      "2^64 - 1)");
}

MixtureAllocation MixtureSampler::allocation_near(std::size_t i,
                                                  std::uint64_t step) const {
  MixtureAllocation a = allocation(i);
  const MixturePoint* best = nullptr;
  for (const MixturePoint& p : known_) {
    if (p.consumed.empty() || p.step < history_[i].from_step || p.step > step ||
        segment_at(p.step) != i || (best != nullptr && p.step <= best->step))
      continue;
    best = &p;
  }
  if (best != nullptr && best->step > a.step()) {
    std::vector<std::uint64_t> counts;
    for (const std::uint32_t s : to_mixture_[i]) counts.push_back(best->consumed[s]);
    a.resume(best->step, std::move(counts));
  }
  a.advance_to(step);
  return a;
}

void MixtureSampler::remember(std::size_t i, const MixtureAllocation& reached,
                              std::size_t slot) const {
  MixturePoint& last = known_[given_ + slot];
  last.step = reached.step();
  last.consumed.assign(sizes_.size(), 0);
  for (std::size_t t = 0; t < to_mixture_[i].size(); ++t)
    last.consumed[to_mixture_[i][t]] = reached.consumed()[t];
}

std::size_t MixtureSampler::segment_at(std::uint64_t step) const {
  std::size_t i = 0;
  while (i + 1 < history_.size() && history_[i + 1].from_step <= step) ++i;
  return i;
}

MixtureAllocation MixtureSampler::allocation(std::size_t i) const {
  const MixtureSegment& seg = history_[i];
  return MixtureAllocation(seg.schedule, global_, seg.from_step, seg.consumed);
}

void MixtureSampler::check_boundary(std::size_t i,
                                    const MixtureAllocation& reached) const {
  const MixtureSegment& next = history_[i + 1];
  for (std::size_t t = 0; t < next.schedule.num_sources(); ++t) {
    const std::string& name = next.schedule.sources()[t];
    const auto& before = history_[i].schedule.sources();
    const auto at = std::find(before.begin(), before.end(), name);
    const std::uint64_t had =
        at == before.end()
            ? 0
            : reached.consumed()[static_cast<std::size_t>(at - before.begin())];
    const std::uint64_t given = next.consumed.empty() ? 0 : next.consumed[t];
    if (had != given)
      throw ConfigError("the mixture's schedule from step " +
                        std::to_string(next.from_step) + " says source '" + name +
                        "' had " + std::to_string(given) +
                        " samples there, but the schedule before it gives " +
                        std::to_string(had) + ": the history does not belong together");
  }
}

namespace {

// `n` elements reserved in `v`, or a ConfigError saying the epoch cannot be held.
template <typename T>
void reserve_epoch(std::vector<T>& v, std::uint64_t n, std::uint64_t steps) {
  try {
    v.reserve(n);
  } catch (const std::length_error&) {
  } catch (const std::bad_alloc&) {
  }
  if (v.capacity() < n)
    throw ConfigError("a mixture epoch of " + std::to_string(steps) +
                      " global steps is too large to hold in memory (" +
                      std::to_string(n) + " entries): give a smaller samples_per_epoch");
}

}  // namespace

std::vector<std::vector<MixtureSample>> MixtureSampler::steps(std::uint64_t from,
                                                              std::uint64_t count) const {
  std::uint64_t end = 0;
  if (__builtin_add_overflow(from, count, &end)) end = ~std::uint64_t{0};
  checked_step(0, end);
  std::size_t i = segment_at(from);
  std::vector<std::uint64_t> sizes;
  auto plan_for = [&](std::size_t seg, MixtureAllocation alloc) {
    sizes.clear();
    for (const std::uint32_t s : to_mixture_[seg]) sizes.push_back(sizes_[s]);
    return MixturePlan(std::move(alloc), sizes, seed_);
  };
  MixturePlan plan = plan_for(i, allocation_near(i, from));
  remember(i, plan.allocation(), 0);
  std::vector<std::vector<MixtureSample>> out;
  reserve_epoch(out, count, count);
  for (std::uint64_t g = from; g < from + count; ++g) {
    if (i + 1 < history_.size() && history_[i + 1].from_step == g) {
      check_boundary(i, plan.allocation());
      ++i;
      plan = plan_for(i, allocation(i));
    }
    std::vector<MixtureSample> batch = plan.next();
    for (MixtureSample& m : batch) m.source = to_mixture_[i][m.source];
    out.push_back(std::move(batch));
  }
  remember(i, plan.allocation(), 1);
  return out;
}

std::vector<std::uint64_t> MixtureSampler::consumed_at(std::uint64_t step) const {
  checked_step(0, step);
  const std::size_t i = segment_at(step);
  const MixtureAllocation a = allocation_near(i, step);
  remember(i, a, 2);
  std::vector<std::uint64_t> out(sizes_.size(), 0);
  for (std::size_t t = 0; t < to_mixture_[i].size(); ++t)
    out[to_mixture_[i][t]] = a.consumed()[t];
  return out;
}

std::vector<MixtureSample> MixtureSampler::global_batch(std::uint64_t step) const {
  return steps(step, 1)[0];
}

EpochOrder MixtureSampler::order(std::uint64_t epoch) const {
  const std::uint64_t first = checked_step(epoch, 0);
  checked_step(epoch, steps_);  // the epoch's end too, before anything is held
  EpochOrder out;
  reserve_epoch(out.indices, size(), steps_);
  reserve_epoch(out.stream_epochs, size(), steps_);
  for (const std::vector<MixtureSample>& batch : steps(first, steps_)) {
    for (std::uint64_t i = rank_ * batch_size_; i < (rank_ + 1) * batch_size_; ++i) {
      out.indices.push_back(offsets_[batch[i].source] + batch[i].index);
      out.stream_epochs.push_back(batch[i].epoch);
    }
  }
  return out;
}

EpochOrder MixtureSampler::partners(std::uint64_t epoch) const {
  const std::uint64_t before = (rank_ * batch_size_ + global_ - 1) % global_;
  const std::uint64_t first = checked_step(epoch, 0);
  checked_step(epoch, steps_);
  EpochOrder out;
  reserve_epoch(out.indices, steps_, steps_);
  reserve_epoch(out.stream_epochs, steps_, steps_);
  for (const std::vector<MixtureSample>& batch : steps(first, steps_)) {
    out.indices.push_back(offsets_[batch[before].source] + batch[before].index);
    out.stream_epochs.push_back(batch[before].epoch);
  }
  return out;
}

std::vector<Index> MixtureSampler::indices(std::uint64_t epoch) const {
  return order(epoch).indices;
}

}  // namespace seedloader
