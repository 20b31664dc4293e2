#include "tools/seed_audit/data_spec.h"

#include <charconv>

#include "loader/in_memory_dataset.h"
#include "rng/error.h"

namespace seedloader::audit {

std::unique_ptr<Dataset> open_dataset(const std::string& spec,
                                      const std::string& transform) {
  std::size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    throw ConfigError("--data " + spec + ": expected KIND:ARG (" + data_spec_help() +
                      ")");
  }
  std::string kind = spec.substr(0, colon), arg = spec.substr(colon + 1);
  if (kind == "synthetic") {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
    if (ec != std::errc() || end != arg.data() + arg.size() || n == 0) {
      throw ConfigError("--data " + spec + ": synthetic needs a positive sample count");
    }
    if (!transform.empty()) {
      throw ConfigError("--transform applies to image datasets, not synthetic:N");
    }
    // Three random numbers per sample, drawn from the sample's stream.
    return std::make_unique<SyntheticDataset>(n, 3);
  }
  throw ConfigError("--data " + spec + ": unknown kind '" + kind + "' (" +
                    data_spec_help() + ")");
}

std::string data_spec_help() { return "synthetic:N"; }

}  // namespace seedloader::audit
