#include "tools/common/loader_flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "seedloader/error.h"
#include "tools/common/data_spec.h"
#include "tools/common/input_file.h"
#include "tools/common/number_checks.h"

namespace seedloader::tools {

const EnumNames<ShuffleOrder>& order_names() {
  static const EnumNames<ShuffleOrder> names{{"numpy", ShuffleOrder::kNumpy},
                                             {"torch", ShuffleOrder::kTorch},
                                             {"shards", ShuffleOrder::kShards}};
  return names;
}

CLI::Option* add_order_option(CLI::App& app, ShuffleOrder& order,
                              std::uint64_t* shuffle_block) {
  CLI::Option* option = add_enum_option(
      app, "--order", order, order_names(),
      "The shuffle's generator: numpy (the seed's PCG64 shuffle stream), torch "
      "(exactly PyTorch's DistributedSampler(seed=SEED) after set_epoch(EPOCH)) or "
      "shards (tar shards in a shuffled order, read whole, samples shuffled within "
      "blocks of --shuffle-block; for data packed with seedloader-pack)");
  if (shuffle_block != nullptr) {
    app.add_option("--shuffle-block", *shuffle_block,
                   "Samples per shuffled block under --order shards (0: four times "
                   "the largest shard's samples)")
        ->check(non_negative_integer())
        ->capture_default_str();
  }
  return option;
}

const EnumNames<Partition>& partition_names() {
  static const EnumNames<Partition> names{{"strided", Partition::kStrided},
                                          {"elastic", Partition::kElastic}};
  return names;
}

CLI::Option* add_partition_option(CLI::App& app, Partition& partition) {
  return add_enum_option(
      app, "--partition", partition, partition_names(),
      "How ranks split the data: strided (PyTorch's DistributedSampler) or elastic "
      "(global batch g is positions [gG, (g+1)G) of the epoch's order, G = batch size "
      "x world size, so it is the same at any world size; needs --seeding sample)");
}

namespace {

constexpr const char* kCanonicalNodesHelp =
    "Under --partition elastic: cut each epoch's order into C parts, every global "
    "batch taking G/C samples of each, so the ranks of one of N nodes (N dividing C) "
    "read only their node's parts, and under --order shards download about their "
    "share (0: no split)";

}  // namespace

CLI::Option* add_canonical_nodes_option(CLI::App& app, std::uint64_t& parts) {
  return app.add_option("--canonical-nodes", parts, kCanonicalNodesHelp)
      ->check(non_negative_integer())
      ->capture_default_str();
}

CLI::Option* add_canonical_nodes_option(CLI::App& app,
                                        std::optional<std::uint64_t>& parts) {
  return app
      .add_option("--canonical-nodes", parts,
                  std::string(kCanonicalNodesHelp) +
                      "; default: the node count the run starts on under a shuffled "
                      "--order shards (kept in the checkpoint), else 0")
      ->check(non_negative_integer());
}

std::uint64_t node_count(std::uint64_t world_size) {
  const auto number = [](const char* name) -> std::uint64_t {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return 0;
    for (const char* p = v; *p; ++p)
      if (*p < '0' || *p > '9') return 0;
    return std::strtoull(v, nullptr, 10);
  };
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"}) {
    if (const std::uint64_t local = number(name); local > 0)
      return world_size % local == 0 ? world_size / local : 0;
  }
  return number("SLURM_NNODES");
}

LoaderFlagOptions add_loader_options(CLI::App& app, LoaderFlags& f) {
  LoaderFlagOptions o;
  o.data = app.add_option("--data", f.data, data_spec_help())->required();
  o.transform =
      app.add_option("--transform", f.transform,
                     "Transform chain (transforms/spec.h), e.g. crop:32:4,hflip")
          ->capture_default_str();
  o.batch_size = app.add_option("--batch-size", f.batch_size, "Samples per batch")
                     ->check(non_negative_integer())
                     ->check(CLI::PositiveNumber)
                     ->capture_default_str();
  o.workers = app.add_option("--workers", f.workers, "Worker processes (0: inline)")
                  ->check(CLI::Range(0, 256))
                  ->capture_default_str();
  o.timeout = app.add_option("--timeout", f.timeout_s,
                             "Seconds the loader waits for one batch before failing "
                             "with the worker it waited on (0: no limit; a dead "
                             "worker is still caught)")
                  ->check(non_negative_integer())
                  // Beyond 10^9 s the value would overflow std::chrono on its way in.
                  ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1'000'000'000}))
                  ->capture_default_str();
  return o;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_number_pair(
    std::string_view text) {
  const auto number = [](std::string_view part, std::uint64_t& v) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    return !part.empty() && ec == std::errc() && end == part.data() + part.size();
  };
  const auto colon = text.find(':');
  std::uint64_t a = 0, b = 0;
  if (colon == std::string_view::npos || !number(text.substr(0, colon), a) ||
      !number(text.substr(colon + 1), b))
    return std::nullopt;
  return std::pair{a, b};
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> parse_skip_steps(
    const std::vector<std::string>& texts) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const std::string& text : texts) {
    const auto range = parse_number_pair(text);
    if (!range || range->first >= range->second)
      throw ConfigError("--skip-steps " + text +
                        ": expected A:B, global steps with A < B");
    out.push_back(*range);
  }
  return out;
}

std::vector<std::uint64_t> read_sample_list(const std::string& flag,
                                            const std::string& path) {
  std::vector<std::uint64_t> out;
  const std::string all = read_input_file(flag + " " + path, path, kMaxSampleListBytes);
  std::string_view rest(all);
  for (std::uint64_t n = 1; !rest.empty(); ++n) {
    const std::size_t eol = rest.find('\n');
    std::string_view text = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    text = text.substr(0, text.find('#'));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
      text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
      text.remove_suffix(1);
    if (text.empty()) continue;
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
      throw ConfigError(flag + " " + path + ":" + std::to_string(n) + ": '" +
                        std::string(text.substr(0, 40)) +
                        (text.size() > 40 ? "..." : "") + "' is not a sample index");
    out.push_back(v);
  }
  return out;
}

std::vector<StepRange> epoch_step_ranges(
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges,
    std::uint64_t per_epoch) {
  std::vector<StepRange> out;
  for (const auto& [a, b] : ranges)
    for (const StepRange& r : seedloader::epoch_step_ranges(a, b, per_epoch))
      out.push_back(r);
  return out;
}

}  // namespace seedloader::tools
