// A mixture's saved position (MixtureState, mixture_dataset.h) as JSON: the one
// reader and writer of the Python package's state_dict()["mixture"], which
// ddp-train's checkpoints keep as metadata "mixture" and seed-audit order and
// trace --mixture read:
//   {"step": S, "samples_per_epoch": N, "epoch_first_step": F,
//    "sources": {NAME: {"size", "epoch", "consumed", "epoch_first_count"}, ...},
//    "history": [[FROM_STEP, [NAME, ...], [[STEP, [WEIGHT, ...]], ...],
//                 [COUNT, ...], INTERPOLATE], ...]}
// (the sources in the mixture's order; "epoch" is consumed / size, written for
// readers and not read back; the history's rows: mixture_history_json.h). The
// document is read with its nesting bounded and every count an unsigned integer
// below 2^64 (base/json_depth.h). Pure functions.
#pragma once

#include <string>

#include "seedloader/mixture_dataset.h"

namespace seedloader {

std::string mixture_state_json(const MixtureState& state);

// Throws DataError naming `where` (a checkpoint, a file, a state dict) when `text`
// is not such JSON: not JSON, nested deeper than 64 arrays and objects, a field
// missing or of another type, a count that is not an unsigned integer, a source of
// size 0, or a history MixtureSchedule refuses. What it holds is checked against a
// mixture by resumed_mixture() and resumed_history().
MixtureState parse_mixture_state(const std::string& where, const std::string& text);

}  // namespace seedloader
