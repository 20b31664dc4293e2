// Mixtures (seedloader/mixture_dataset.h): MixtureDataset, a data set to the
// engine over seedloader datasets, and MixtureOrder, the order of a mixture from
// its shape alone, for what the Python loader computes without an engine (len(),
// the sampler it shows, state_dict() and load_state_dict(): the saved state,
// MixtureState, is written, read and checked here, in C++, as ddp-train and
// seed-audit do). A history crosses as a list of (from_step, source names,
// [(step, [weight per source])], consumed counts, interpolate).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "python/src/bindings.h"
#include "seedloader/error.h"
#include "seedloader/ledger.h"
#include "seedloader/mixture_dataset.h"
#include "seedloader/mixture_state_json.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

using Points = std::vector<std::pair<std::uint64_t, std::vector<double>>>;
using Segment = std::tuple<std::uint64_t, std::vector<std::string>, Points,
                           std::vector<std::uint64_t>, bool>;
// (step, consumed per source): counts a saved state gives (MixturePoint).
using Known = std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>>;

std::vector<MixturePoint> points_from(const Known& known) {
  std::vector<MixturePoint> out;
  for (const auto& [step, consumed] : known) out.push_back({step, consumed});
  return out;
}

Known known_of(const std::vector<MixturePoint>& points) {
  Known out;
  for (const MixturePoint& p : points) out.emplace_back(p.step, p.consumed);
  return out;
}

std::vector<MixtureSegment> history_from(const std::vector<Segment>& segments) {
  std::vector<MixtureSegment> out;
  for (const auto& [from, names, points, consumed, interpolate] : segments) {
    std::vector<WeightPoint> weights;
    for (const auto& [step, w] : points) weights.push_back({step, w});
    out.push_back(
        {from, MixtureSchedule(names, std::move(weights), interpolate), consumed});
  }
  return out;
}

// `history` as it crosses (the points as given).
std::vector<Segment> segments_of(const std::vector<MixtureSegment>& history) {
  std::vector<Segment> out;
  for (const MixtureSegment& seg : history) {
    Points points;
    for (const WeightPoint& p : seg.schedule.given_points())
      points.emplace_back(p.step, p.weights);
    out.emplace_back(seg.from_step, seg.schedule.sources(), std::move(points),
                     seg.consumed, seg.schedule.interpolated());
  }
  return out;
}

// A numpy array owning `values`.
nb::ndarray<nb::numpy, std::uint64_t, nb::ndim<1>> owned(
    std::vector<std::uint64_t> values) {
  auto* held = new std::vector<std::uint64_t>(std::move(values));
  nb::capsule owner(
      held, [](void* p) noexcept { delete static_cast<std::vector<std::uint64_t>*>(p); });
  return nb::ndarray<nb::numpy, std::uint64_t, nb::ndim<1>>(held->data(), {held->size()},
                                                            owner);
}

}  // namespace

void bind_mixture(nb::module_& m) {
  m.def(
      "check_mixture_schedule",
      [](const std::vector<std::string>& names, const Points& points, bool interpolate) {
        history_from({Segment{0, names, points, {}, interpolate}});
      },
      nb::arg("names"), nb::arg("points"), nb::arg("interpolate") = false,
      "ConfigError unless (names, [(step, weights)]) is a valid schedule.");

  nb::class_<MixtureState>(
      m, "MixtureState",
      "A mixture loader's saved position (mixture_dataset.h): state_dict()['mixture'].")
      .def_static(
          "parse",
          [](const std::string& text, const std::string& where) {
            try {
              return parse_mixture_state(where, text);
            } catch (const DataError& e) {
              // A state handed to load_state_dict() is configuration, refused as
              // its every other field is.
              throw ConfigError(e.what());
            }
          },
          nb::arg("text"), nb::arg("where"),
          "The state from its JSON (mixture_state_json.h); ConfigError naming `where` "
          "and what is wrong: not JSON, nested too deep, a field missing or of "
          "another type, a count that is not an unsigned integer, a bad history.")
      .def("json", &mixture_state_json, "The state as JSON, state_dict()['mixture']'s.");

  nb::class_<MixtureSampler>(m, "MixtureOrder",
                             "A mixture's order for one rank (mixture_dataset.h).")
      .def(
          "__init__",
          [](MixtureSampler* self, std::vector<std::string> names,
             std::vector<std::uint64_t> sizes, const std::vector<Segment>& history,
             std::uint64_t samples_per_epoch, std::uint64_t batch_size,
             std::uint64_t world_size, std::uint64_t rank, std::uint64_t seed,
             const Known& known) {
            new (self)
                MixtureSampler(std::move(names), std::move(sizes), history_from(history),
                               samples_per_epoch, batch_size, world_size, rank, seed,
                               points_from(known));
          },
          nb::arg("names"), nb::arg("sizes"), nb::arg("history"),
          nb::arg("samples_per_epoch"), nb::arg("batch_size"), nb::arg("world_size"),
          nb::arg("rank"), nb::arg("seed"), nb::arg("known") = Known())
      .def_prop_ro("steps_per_epoch", &MixtureSampler::steps_per_epoch)
      .def(
          "order",
          [](const MixtureSampler& s, std::uint64_t epoch) {
            EpochOrder order = s.order(epoch);
            return std::make_pair(owned(std::move(order.indices)),
                                  owned(std::move(order.stream_epochs)));
          },
          nb::arg("epoch"), "(indices, their source epochs) of this rank in `epoch`.")
      .def("consumed_at", &MixtureSampler::consumed_at, nb::arg("step"))
      .def("check_position", &MixtureSampler::check_position, nb::arg("epoch_first_step"),
           nb::arg("step"),
           "ConfigError unless a saved state could be at (its epoch's first step, "
           "step): checked before consumed_at(step) walks from the first.")
      .def(
          "global_batch",
          [](const MixtureSampler& s, std::uint64_t step) {
            std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>> out;
            for (const MixtureSample& m : s.global_batch(step))
              out.emplace_back(m.source, m.epoch, m.index);
            return out;
          },
          nb::arg("step"), "[(source, source epoch, index)] of global step `step`.")
      .def(
          "state",
          [](const MixtureSampler& s, std::uint64_t epoch_first_step,
             std::uint64_t step) { return mixture_state(s, epoch_first_step, step); },
          nb::arg("epoch_first_step"), nb::arg("step"),
          "The saved position of a loader over this order's mixture whose epoch began "
          "at global step `epoch_first_step` and that has taken the steps before "
          "`step`.")
      .def(
          "resumed",
          [](const MixtureSampler& s, const MixtureState& saved,
             std::optional<std::uint64_t> epoch) {
            MixtureResume r = resumed_history(s, saved, epoch);
            return std::make_pair(segments_of(r.history), known_of(r.known));
          },
          nb::arg("saved"), nb::arg("epoch").none() = nb::none(),
          "(history, known) of this order's mixture continuing from `saved` "
          "(resumed_history): ConfigError for a state another mixture saved (a "
          "source gone or resized, another samples_per_epoch), a position no epoch "
          "has or not `epoch`'s, counts its history does not give.")
      .def(
          "moved_index",
          [](const MixtureSampler& s, const MixtureState& saved, std::uint64_t index) {
            return moved_index(saved, s, index);
          },
          nb::arg("saved"), nb::arg("index"),
          "Index `index` of the mixture `saved` was taken of as an index of this "
          "order's: the same source's sample.");

  nb::class_<LedgerMixture>(
      m, "LedgerMixture",
      "A mixture's shape, whose order the ledger computes (ledger.h).")
      .def(
          "__init__",
          [](LedgerMixture* self, std::vector<std::string> names,
             std::vector<std::uint64_t> sizes, const std::vector<Segment>& history,
             std::uint64_t samples_per_epoch, const Known& known) {
            new (self)
                LedgerMixture{std::move(names), std::move(sizes), history_from(history),
                              samples_per_epoch, points_from(known)};
          },
          nb::arg("names"), nb::arg("sizes"), nb::arg("history"),
          nb::arg("samples_per_epoch"), nb::arg("known") = Known());

  nb::class_<MixtureDataset, Dataset>(m, "MixtureDataset")
      .def(
          "__init__",
          [](MixtureDataset* self, const std::vector<std::string>& names,
             const std::vector<Dataset*>& datasets, const std::vector<Segment>& history,
             std::uint64_t samples_per_epoch, const Known& known) {
            if (names.size() != datasets.size())
              throw ConfigError("a mixture of " + std::to_string(names.size()) +
                                " names given " + std::to_string(datasets.size()) +
                                " data sets");
            std::vector<MixtureSource> sources;
            for (std::size_t s = 0; s < names.size(); ++s) {
              // Not owned: keep_alive below holds the list that holds them.
              sources.push_back({names[s], std::shared_ptr<const Dataset>(
                                               datasets[s], [](const Dataset*) {})});
            }
            new (self) MixtureDataset(std::move(sources), history_from(history),
                                      samples_per_epoch, points_from(known));
          },
          nb::arg("names"), nb::arg("datasets"), nb::arg("history"),
          nb::arg("samples_per_epoch"), nb::arg("known") = Known(),
          nb::keep_alive<1, 3>())
      .def("locate", &MixtureDataset::locate, nb::arg("index"));
}

}  // namespace seedloader::python
