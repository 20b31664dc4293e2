// Datasets named on the command line: "KIND:ARG", e.g. "synthetic:5000" or
// "imagefolder:/data/train", with a transform chain from transforms/spec.h.
#pragma once

#include <memory>
#include <string>

#include "seedloader/dataset.h"

namespace seedloader::tools {

// Opens the dataset `spec` names, with the transform chain `transform` (a
// transforms/spec.h string; empty for none). Throws ConfigError for an unknown
// kind or a bad argument, naming it, and DataError for unreadable data.
std::unique_ptr<Dataset> open_dataset(const std::string& spec,
                                      const std::string& transform);

// The kinds open_dataset accepts, for --help.
std::string data_spec_help();

}  // namespace seedloader::tools
