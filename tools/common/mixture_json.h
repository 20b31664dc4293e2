// A mixture's position as JSON, the shape of the Python package's
// state_dict()["mixture"], which ddp-train's checkpoints keep as metadata "mixture"
// and seed-audit trace --mixture reads:
//   {"step": S, "samples_per_epoch": N, "epoch_first_step": F,
//    "sources": {NAME: {"size", "epoch", "consumed", "epoch_first_count"}, ...},
//    "history": [[FROM_STEP, [NAME, ...], [[STEP, [WEIGHT, ...]], ...],
//                 [COUNT, ...], INTERPOLATE], ...]}
// (the sources in the mixture's order). Pure functions.
#pragma once

#include <string>

#include "seedloader/mixture_dataset.h"

namespace seedloader::tools {

std::string mixture_state_json(const MixtureState& state);

// Throws DataError naming `where` (a checkpoint, a file) when `text` is not such
// JSON.
MixtureState parse_mixture_state(const std::string& where, const std::string& text);

}  // namespace seedloader::tools
