// LoaderFlags: the DataLoader flags every tool takes (--data, --transform,
// --batch-size, --workers, --timeout, --seeding), declared once so they are spelled,
// checked and documented alike. Each tool keeps its own defaults (the fields' values when
// the options are added) and may reword a flag's help through the returned options.
// A plain value type.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedloader/loader_options.h"
#include "seedloader/sampler.h"
#include "tools/common/enum_option.h"

namespace seedloader::tools {

struct LoaderFlags {
  std::string data;       // a data_spec.h spec
  std::string transform;  // a transforms/spec.h chain; empty for none
  std::uint64_t batch_size = 32;
  int workers = 2;
  // Seconds the loader waits for one batch before a TimeoutError naming the
  // worker (LoaderOptions::timeout); 0 waits indefinitely.
  std::uint64_t timeout_s = 120;
};

// The options add_loader_options() registered, to adjust help or add checks.
struct LoaderFlagOptions {
  CLI::Option* data = nullptr;
  CLI::Option* transform = nullptr;
  CLI::Option* batch_size = nullptr;
  CLI::Option* workers = nullptr;
  CLI::Option* timeout = nullptr;
  CLI::Option* seeding = nullptr;
};

// The names --order takes: numpy, torch, shards.
const EnumNames<ShuffleOrder>& order_names();
// Registers --order into `order` (sampler.h's ShuffleOrder), and --shuffle-block
// into `shuffle_block` when given (LoaderOptions::shuffle_block).
CLI::Option* add_order_option(CLI::App& app, ShuffleOrder& order,
                              std::uint64_t* shuffle_block = nullptr);

// The names --partition takes: strided, elastic.
const EnumNames<Partition>& partition_names();
// Registers --partition into `partition` (loader_options.h's Partition).
CLI::Option* add_partition_option(CLI::App& app, Partition& partition);
// Registers --canonical-nodes into `parts` (LoaderOptions::canonical_nodes).
CLI::Option* add_canonical_nodes_option(CLI::App& app, std::uint64_t& parts);
// The same for a run, where unset means default_canonical_nodes() (one part per
// node under --order shards).
CLI::Option* add_canonical_nodes_option(CLI::App& app,
                                        std::optional<std::uint64_t>& parts);
// The physical nodes a world of `world_size` ranks runs on, from the launcher
// (OMPI_COMM_WORLD_LOCAL_SIZE, torchrun's LOCAL_WORLD_SIZE: ranks per node; else
// SLURM_NNODES); 0 when none says or the ranks per node do not divide the world.
std::uint64_t node_count(std::uint64_t world_size);

// Registers --data (required), --transform, --batch-size, --workers and --timeout
// on `app`.
LoaderFlagOptions add_loader_options(CLI::App& app, LoaderFlags& f);

// The same, plus --seeding into `seeding`, named by `seeding_names` (each tool
// offers its own modes).
template <typename Seeding>
LoaderFlagOptions add_loader_options(CLI::App& app, LoaderFlags& f, Seeding& seeding,
                                     const EnumNames<Seeding>& seeding_names,
                                     const std::string& seeding_help) {
  LoaderFlagOptions o = add_loader_options(app, f);
  o.seeding = add_enum_option(app, "--seeding", seeding, seeding_names, seeding_help);
  return o;
}

// "A:B", two decimal integers, as (A, B); nullopt for anything else.
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_number_pair(
    std::string_view text);
// --skip-steps A:B values (global steps A to B-1, A < B) as (A, B) pairs. Throws
// ConfigError naming the value that is not one.
std::vector<std::pair<std::uint64_t, std::uint64_t>> parse_skip_steps(
    const std::vector<std::string>& texts);
// The sample indices listed in the file `path`, one a line (blank lines and text from
// '#' on ignored), for --skip-samples. Throws ConfigError naming `flag`, the file and
// the line that is not an index, or a file that cannot be read, is not a regular
// file (a directory, /dev/zero) or is larger than kMaxSampleListBytes
// (input_file.h).
std::vector<std::uint64_t> read_sample_list(const std::string& flag,
                                            const std::string& path);
// Global steps [a, b) of `ranges`, cut into the epochs of `per_epoch` steps they
// fall in (LoaderOptions::skip's ranges, at most three per span whatever its
// length: seedloader::epoch_step_ranges). None when per_epoch is 0.
std::vector<StepRange> epoch_step_ranges(
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
    std::uint64_t per_epoch);

}  // namespace seedloader::tools
