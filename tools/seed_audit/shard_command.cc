// seed-audit shard: print the indices one rank visits in one epoch.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "seedloader/distributed_sampler.h"
#include "tools/common/loader_flags.h"
#include "tools/common/number_checks.h"
#include "tools/seed_audit/commands.h"

namespace seedloader::audit {
namespace {

struct ShardArgs {
  std::uint64_t size = 0;
  DistributedOptions options{.shuffle = false};
  std::uint64_t epoch = 0;
  bool json = false;
};

int run_shard(const ShardArgs& a) {
  DistributedSampler sampler(a.size, a.options);
  std::vector<Index> indices = sampler.indices(a.epoch);
  if (a.json) {
    std::cout << nlohmann::json{{"indices", indices}}.dump() << "\n";
    return kExitOk;
  }
  std::cout << "rank " << a.options.rank << " of " << a.options.world_size << ", epoch "
            << a.epoch << ": " << indices.size() << " indices (dataset " << a.size
            << ", total " << sampler.total_size() << ")\n";
  for (std::size_t i = 0; i < indices.size(); ++i) {
    std::cout << (i % 16 == 0 ? (i ? "\n" : "") : " ") << indices[i];
  }
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

void add_shard_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<ShardArgs>();
  CLI::App* cmd = app.add_subcommand(
      "shard",
      "Print the indices rank R sees in an epoch, with PyTorch DistributedSampler\n"
      "semantics (padding by repetition, or truncation with --drop-last).");
  cmd->add_option("--size", args->size, "Dataset size N")
      ->check(tools::non_negative_integer())
      ->required();
  cmd->add_option("--world-size", args->options.world_size, "Number of ranks")
      ->check(tools::non_negative_integer())
      ->required();
  cmd->add_option("--rank", args->options.rank, "This rank")
      ->check(tools::non_negative_integer())
      ->required();
  cmd->add_option("--epoch", args->epoch, "Epoch")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "Base seed (used with --shuffle)")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_flag("--shuffle", args->options.shuffle,
                "Shuffle (identically on every rank) with the generator --order names");
  tools::add_order_option(*cmd, args->options.order);
  cmd->add_flag("--drop-last", args->options.drop_last,
                "Truncate to a multiple of the world size instead of padding");
  cmd->add_flag("--json", args->json, "Print {\"indices\":[...]}");
  cmd->callback([args, &action] { action = [args] { return run_shard(*args); }; });
}

}  // namespace seedloader::audit
