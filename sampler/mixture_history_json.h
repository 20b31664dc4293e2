// A mixture's history of weights (MixtureSegment, seedloader/mixture.h) as JSON,
// the "history" of a saved mixture state (seedloader/mixture_state_json.h), one
// segment a row:
//   [[FROM_STEP, [NAME, ...], [[STEP, [WEIGHT, ...]], ...], [COUNT, ...],
//     INTERPOLATE], ...]
// (INTERPOLATE optional when read: false; docs/datasets.md, Mixtures). The one
// reader and writer of that row: the loader's mixture state and the audit's
// composition check both use it. Header only, beside the segments' own module, so
// that the audit library reads it without linking the loader; what includes it
// links nlohmann_json. Stateless.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "seedloader/error.h"
#include "seedloader/mixture.h"

namespace seedloader {

// `history` as the rows above (its points as given, not interpolation's stairs).
inline nlohmann::ordered_json mixture_history_json(
    const std::vector<MixtureSegment>& history) {
  using Json = nlohmann::ordered_json;
  Json out = Json::array();
  for (const MixtureSegment& seg : history) {
    Json points = Json::array();
    for (const WeightPoint& p : seg.schedule.given_points())
      points.push_back({p.step, p.weights});
    out.push_back({seg.from_step, seg.schedule.sources(), points, seg.consumed,
                   seg.schedule.interpolated()});
  }
  return out;
}

// The segments of `history`. Throws DataError naming `where` when it is malformed
// (not an array, a row of fewer than four elements, naming the row; a count that
// is not an unsigned integer), empty, or a schedule MixtureSchedule refuses.
inline std::vector<MixtureSegment> parse_mixture_history(
    const std::string& where, const nlohmann::ordered_json& history) {
  using Json = nlohmann::ordered_json;
  std::vector<MixtureSegment> out;
  if (!history.is_array())
    throw DataError(where + ": the mixture history is not an array of rows");
  try {
    for (const Json& seg : history) {
      if (!seg.is_array() || seg.size() < 4)
        throw DataError(where + ": the mixture history's row " +
                        std::to_string(out.size()) +
                        " is not [FROM_STEP, [NAME, ...], [[STEP, [WEIGHT, ...]], ...], "
                        "[COUNT, ...], INTERPOLATE]: " +
                        seg.dump().substr(0, 80));
      std::vector<WeightPoint> points;
      for (const Json& p : seg.at(2))
        points.push_back({json_unsigned(p.at(0)), p.at(1).get<std::vector<double>>()});
      // The fifth element, interpolation, is absent from states written before it.
      const bool interpolate = seg.size() > 4 && seg.at(4).get<bool>();
      out.push_back({json_unsigned(seg.at(0)),
                     MixtureSchedule(seg.at(1).get<std::vector<std::string>>(),
                                     std::move(points), interpolate),
                     json_unsigned_list(seg.at(3))});
    }
  } catch (const Json::exception& e) {
    throw DataError(where + ": the mixture history is malformed: " + e.what());
  } catch (const ConfigError& e) {
    throw DataError(where + ": the mixture history: " + e.what());
  }
  if (out.empty()) throw DataError(where + ": the mixture history is empty");
  return out;
}

}  // namespace seedloader
