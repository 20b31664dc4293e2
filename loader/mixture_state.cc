// The save and the resume of a mixture loader's position (MixtureState,
// seedloader/mixture_dataset.h); its JSON is mixture_state_json.cc.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"

namespace seedloader {

namespace {

std::string counts_text(const std::vector<std::uint64_t>& counts) {
  std::string out = "[";
  for (std::size_t i = 0; i < counts.size(); ++i)
    out += (i ? ", " : "") + std::to_string(counts[i]);
  return out + "]";
}

// Index `index` of `saved`'s mixture as an index of `mixture` (a MixtureDataset or
// a MixtureSampler), whose sources are `names`.
template <typename Mixture>
std::uint64_t moved(const MixtureState& saved, const std::vector<std::string>& names,
                    const Mixture& mixture, std::uint64_t index) {
  std::uint64_t local = index;
  for (std::size_t s = 0; s < saved.names.size(); ++s) {
    if (local >= saved.sizes[s]) {
      local -= saved.sizes[s];
      continue;
    }
    const auto it = std::find(names.begin(), names.end(), saved.names[s]);
    if (it != names.end())
      return mixture.offset(static_cast<std::size_t>(it - names.begin())) + local;
    throw ConfigError("sample " + std::to_string(index) +
                      " of the saved mixture is in source '" + saved.names[s] +
                      "', which this mixture does not hold");
  }
  throw ConfigError("sample " + std::to_string(index) + " is past the saved mixture's " +
                    std::to_string(index - local) + " samples");
}

}  // namespace

MixtureState mixture_state(const MixtureDataset& mixture, std::uint64_t global_batch,
                           std::uint64_t seed, std::uint64_t epoch_first_step,
                           std::uint64_t step) {
  return mixture_state(MixtureSampler(mixture, global_batch, 1, 0, seed),
                       epoch_first_step, step);
}

MixtureState mixture_state(const MixtureSampler& order, std::uint64_t epoch_first_step,
                           std::uint64_t step) {
  MixtureState s;
  s.step = step;
  s.epoch_first_step = epoch_first_step;
  s.samples_per_epoch = order.samples_per_epoch();
  s.names = order.names();
  s.sizes = order.sizes();
  s.epoch_first_counts = order.consumed_at(epoch_first_step);
  s.consumed = order.consumed_at(step);
  s.history = order.history();
  return s;
}

MixtureResume resumed_history(const MixtureSampler& order, const MixtureState& saved,
                              std::optional<std::uint64_t> epoch) {
  if (saved.samples_per_epoch != order.samples_per_epoch())
    throw ConfigError("the state was saved with samples_per_epoch " +
                      std::to_string(saved.samples_per_epoch) + ", this mixture has " +
                      std::to_string(order.samples_per_epoch()));
  const std::vector<std::string>& names = order.names();
  for (std::size_t t = 0; t < saved.names.size(); ++t) {
    const auto it = std::find(names.begin(), names.end(), saved.names[t]);
    if (it == names.end())
      throw ConfigError(
          "the state's source '" + saved.names[t] +
          "' is not in this mixture; keep it with a weight of 0 to pause it");
    const std::uint64_t now = order.sizes()[static_cast<std::size_t>(it - names.begin())];
    if (now != saved.sizes[t])
      throw ConfigError("the mixture's source '" + saved.names[t] + "' had " +
                        std::to_string(saved.sizes[t]) +
                        " samples when the state was saved, it has " +
                        std::to_string(now) + " now");
  }
  // Each of this mixture's sources' count in `given` (per saved source); 0 for a
  // source new here.
  auto counts = [&](const std::vector<std::uint64_t>& given) {
    std::vector<std::uint64_t> out;
    for (const std::string& name : names) {
      const auto it = std::find(saved.names.begin(), saved.names.end(), name);
      out.push_back(it == saved.names.end()
                        ? 0
                        : given[static_cast<std::size_t>(it - saved.names.begin())]);
    }
    return out;
  };
  MixtureResume out{saved.history, {}};
  std::vector<MixtureSegment>& history = out.history;
  if (history.empty()) throw ConfigError("the state's mixture history is empty");
  // The saved counts must be the saved history's own, from the epoch's first step:
  // at most an epoch's steps from there, whatever the step (a position no epoch
  // has is refused first).
  const std::uint64_t global = order.global_batch_size();
  const MixtureSampler saved_order(saved.names, saved.sizes, history,
                                   saved.samples_per_epoch, global, 1, 0, order.seed(),
                                   {{saved.epoch_first_step, saved.epoch_first_counts}});
  saved_order.check_position(saved.epoch_first_step, saved.step);
  if (epoch) {
    std::uint64_t first = 0;
    const bool past =
        __builtin_mul_overflow(*epoch, saved_order.steps_per_epoch(), &first);
    if (past || first != saved.epoch_first_step)
      throw ConfigError("the state's mixture epoch begins at step " +
                        std::to_string(saved.epoch_first_step) + ", but its epoch " +
                        std::to_string(*epoch) + " of " +
                        std::to_string(saved_order.steps_per_epoch()) +
                        " steps begins at step " +
                        (past ? "past 2^64 - 1" : std::to_string(first)));
  }
  const std::vector<std::uint64_t> reached = saved_order.consumed_at(saved.step);
  if (reached != saved.consumed)
    throw ConfigError("the state's mixture counts at step " + std::to_string(saved.step) +
                      " are " + counts_text(saved.consumed) + ", but its history gives " +
                      counts_text(reached) +
                      " there: the state does not belong together");
  if (!history.back().schedule.same_as(order.history().back().schedule)) {
    if (saved.step < history.back().from_step)
      throw ConfigError("the state's step " + std::to_string(saved.step) +
                        " is before its last schedule's first, " +
                        std::to_string(history.back().from_step));
    if (saved.step == history.back().from_step) history.pop_back();
    history.push_back(
        {saved.step, order.history().back().schedule, counts(saved.consumed)});
  }
  out.known = {{saved.epoch_first_step, counts(saved.epoch_first_counts)},
               {saved.step, counts(saved.consumed)}};
  // The whole history checked now, not at the first epoch it is read in.
  MixtureSampler(names, order.sizes(), history, order.samples_per_epoch(), global, 1, 0,
                 order.seed(), out.known)
      .consumed_at(saved.step);
  return out;
}

MixtureDataset resumed_mixture(const MixtureDataset& mixture, const MixtureState& saved,
                               std::uint64_t global_batch, std::uint64_t seed) {
  MixtureResume r =
      resumed_history(MixtureSampler(mixture, global_batch, 1, 0, seed), saved);
  return MixtureDataset(mixture.sources(), std::move(r.history),
                        mixture.samples_per_epoch(), std::move(r.known));
}

std::uint64_t moved_index(const MixtureState& saved, const MixtureDataset& mixture,
                          std::uint64_t index) {
  std::vector<std::string> names;
  for (const MixtureSource& s : mixture.sources()) names.push_back(s.name);
  return moved(saved, names, mixture, index);
}

std::uint64_t moved_index(const MixtureState& saved, const MixtureSampler& order,
                          std::uint64_t index) {
  return moved(saved, order.names(), order, index);
}

}  // namespace seedloader
