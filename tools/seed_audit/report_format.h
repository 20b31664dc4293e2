// The audit report as text for people and as JSON for programs:
// {"verdict":"clean"|"findings","samples":N,"findings":[{"kind":..,"count":..,
//  "examples":[{"rank":..,"epoch":..,"worker":..,"batch":..,"index":..,
//               "same_as":{..},"note":"..","aug":".."}],"hint":".."}],
//  "information":[...]}
// with "information" in the findings' shape: what the run declared rather than did
// wrong (declared_skip), which leaves the verdict clean. Pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

nlohmann::ordered_json report_json(const Report& report);
std::string report_text(const Report& report);

}  // namespace seedloader::audit
