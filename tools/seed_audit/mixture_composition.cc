#include "tools/seed_audit/mixture_composition.h"

#include <algorithm>
#include <utility>

#include "base/json_depth.h"
#include "sampler/mixture_history_json.h"
#include "seedloader/batch_sampler.h"
#include "seedloader/error.h"
#include "tools/seed_audit/finding_tally.h"

namespace seedloader::audit {

using Json = nlohmann::ordered_json;
using u128 = unsigned __int128;

MixtureExpectation mixture_expectation(const std::string& where, const std::string& state,
                                       std::uint64_t global_batch) {
  if (global_batch == 0)
    throw ConfigError(where + ": the global batch must be at least 1");
  MixtureExpectation e;
  e.global_batch = global_batch;
  try {
    const Json j = parse_json<Json>(state);
    e.history = parse_mixture_history(where, j.at("history"));
    const auto per_epoch = json_unsigned(j.at("samples_per_epoch"));
    e.steps_per_epoch = std::max<std::uint64_t>(
        1, batches_per_epoch({.samples = per_epoch, .batch_size = global_batch}));
  } catch (const Json::exception& e2) {
    throw DataError(where + ": not a mixture state: " + e2.what());
  }
  return e;
}

CompositionDetector::CompositionDetector(MixtureExpectation expected)
    : expected_(std::move(expected)) {}

void CompositionDetector::add(const SampleRecord& r) {
  if (r.source.empty()) return;
  ++steps_[std::uint64_t{r.epoch} * expected_.steps_per_epoch + r.batch][r.run][r.source];
}

void CompositionDetector::report(Report& out) const {
  FindingTally off;
  const std::uint64_t g_batch = expected_.global_batch;
  const std::uint64_t k = expected_.steps_per_epoch;
  const auto& history = expected_.history;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const MixtureSchedule& schedule = history[i].schedule;
    const std::uint64_t from = history[i].from_step;
    const std::uint64_t end =
        i + 1 < history.size() ? history[i + 1].from_step : ~std::uint64_t{0};
    auto it = steps_.lower_bound(from);
    if (it == steps_.end() || it->first >= end) continue;
    const std::uint64_t first = it->first;
    const u128 tolerance = (first == from ? 1 : 2) * static_cast<u128>(kMixtureUnit);
    std::vector<std::uint64_t> counts(schedule.num_sources());
    for (std::uint64_t step = first; it != steps_.end() && it->first < end;
         ++it, ++step) {
      if (it->first != step) break;                      // a step missing from the trace
      const auto& latest = it->second.rbegin()->second;  // the last run's
      std::uint64_t total = 0;
      for (const auto& [name, n] : latest) total += n;
      if (total != g_batch) break;  // some ranks' samples only
      for (const auto& [name, n] : latest) {
        const auto& names = schedule.sources();
        const auto at = std::find(names.begin(), names.end(), name);
        if (at == names.end()) {
          SamplePlace place{std::nullopt, static_cast<std::uint32_t>(step / k),
                            std::nullopt, step % k, std::nullopt};
          off.add(Example{place, std::nullopt,
                          std::to_string(n) + " samples of '" + name +
                              "', which the schedule in force from step " +
                              std::to_string(from) + " does not name",
                          ""});
          continue;
        }
        counts[static_cast<std::size_t>(at - names.begin())] += n;
      }
      for (std::size_t s = 0; s < counts.size(); ++s) {
        const u128 target = static_cast<u128>(g_batch) * (schedule.integral(s, step + 1) -
                                                          schedule.integral(s, first));
        const u128 have = static_cast<u128>(counts[s]) * kMixtureUnit;
        if ((have > target ? have - target : target - have) < tolerance) continue;
        // The loader's epoch and step (no source named: its epoch would be read as
        // the source's).
        const SamplePlace place{std::nullopt, static_cast<std::uint32_t>(step / k),
                                std::nullopt, step % k, std::nullopt};
        const double want =
            static_cast<double>(target) / static_cast<double>(kMixtureUnit);
        off.add(Example{place, std::nullopt,
                        std::to_string(counts[s]) + " samples of '" +
                            schedule.sources()[s] + "' in global steps " +
                            std::to_string(first) + " to " + std::to_string(step) +
                            ", where its weights give " + std::to_string(want),
                        ""});
      }
    }
  }
  off.report_as(FindingKind::kMixtureComposition, out);
}

}  // namespace seedloader::audit
