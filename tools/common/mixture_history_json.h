// A mixture's history of weights as JSON, the "history" of a mixture state
// (state_dict()["mixture"], ddp-train's checkpoint metadata "mixture"), one
// segment a row:
//   [[FROM_STEP, [NAME, ...], [[STEP, [WEIGHT, ...]], ...], [COUNT, ...],
//     INTERPOLATE], ...]
// (INTERPOLATE optional: false; docs/datasets.md, Mixtures). Read by the tools'
// mixture state (mixture_json.h) and by the audit's composition check.
// Header only, so that the audit library uses it without linking tools_common.
// Stateless.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "seedloader/error.h"
#include "seedloader/mixture.h"
#include "tools/common/json_depth.h"

namespace seedloader::tools {

// The segments of `history`. Throws DataError naming `where` when it is malformed,
// empty, or a schedule MixtureSchedule refuses.
inline std::vector<MixtureSegment> parse_mixture_history(
    const std::string& where, const nlohmann::ordered_json& history) {
  using Json = nlohmann::ordered_json;
  std::vector<MixtureSegment> out;
  try {
    for (const Json& seg : history) {
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

}  // namespace seedloader::tools
