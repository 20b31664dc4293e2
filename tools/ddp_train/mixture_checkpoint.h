// A mixture's position in a checkpoint: the metadata entry "mixture", JSON of the
// same shape as the Python package's state_dict()["mixture"]:
//   {"step": S, "samples_per_epoch": N, "epoch_first_step": F,
//    "sources": {NAME: {"size", "epoch", "consumed", "epoch_first_count"}, ...},
//    "history": [[FROM_STEP, [NAME, ...], [[STEP, [WEIGHT, ...]], ...],
//                 [COUNT, ...]], ...]}
// (the sources in the mixture's order). Pure functions.
#pragma once

#include <string>

#include "seedloader/mixture_dataset.h"

namespace seedloader::train {

std::string mixture_state_json(const MixtureState& state);

// Throws DataError naming the checkpoint `path` when `text` is not such JSON.
MixtureState parse_mixture_state(const std::string& path, const std::string& text);

}  // namespace seedloader::train
