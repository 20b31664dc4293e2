// The configuration flags of a ledger query (seedloader/ledger.h), shared by
// `seed-audit order` and `seed-audit trace --expect`: the data (--data SPEC or
// --size N) and the loader's flags that decide the order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "seedloader/ledger.h"

namespace seedloader::audit {

struct LedgerFlags {
  std::string data;
  std::optional<std::uint64_t> size;
  std::uint64_t seed = 0;
  LoaderOptions options;
  std::uint64_t epoch = 0;
  std::vector<std::string> skip_steps;  // "A:B", global steps A to B-1
  std::string skip_samples;             // a file of sample indices, one a line
  std::string mixture_state;            // a mixture state's JSON file, for mix: data
  CLI::Option* data_option = nullptr;
  CLI::Option* size_option = nullptr;
};

// Registers --data, --size, --seed (required), --batch-size, --workers,
// --world-size, --partition, --shuffle, --order, --shuffle-block, --drop-last,
// --seeding, --skip-steps, --skip-samples and --mixture (the state of a mixture
// in --data whose run resumed: its weights' history and counts), with `epoch_help`
// for --epoch (empty: no --epoch).
void add_ledger_flags(CLI::App& app, LedgerFlags& flags, const std::string& epoch_help);
// Throws CLI::RequiredError when neither --data nor --size was given.
void require_data(const LedgerFlags& flags);
// The query the flags describe (steps and filters left to the caller); opens
// --data for its size and shards (a mixture: its shape, whose order the query
// computes), and sets `what` to its description.
LedgerQuery ledger_query(const LedgerFlags& flags, std::string& what);

}  // namespace seedloader::audit
