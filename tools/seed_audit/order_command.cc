// seed-audit order: the ledger (seedloader/ledger.h) from the command line: the
// samples any step of any rank trains on, computed from the configuration alone.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "seedloader/error.h"
#include "seedloader/ledger.h"
#include "tools/common/data_spec.h"
#include "tools/common/enum_option.h"
#include "tools/common/loader_flags.h"
#include "tools/common/number_checks.h"
#include "tools/seed_audit/commands.h"

namespace seedloader::audit {
namespace {

struct OrderArgs {
  std::string data;
  std::optional<std::uint64_t> size;
  std::uint64_t seed = 0;
  LoaderOptions options;
  std::uint64_t epoch = 0;
  std::optional<std::uint64_t> step;
  std::string steps;  // "A:B"
  std::optional<std::uint64_t> rank;
  std::optional<int> worker;
  std::string json;
};

// "A:B" as [A, B); A and B decimal integers, A < B.
std::pair<std::uint64_t, std::uint64_t> parse_steps(const std::string& text) {
  const auto colon = text.find(':');
  const auto number = [&](const std::string& part) {
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      if (part.empty() || part[0] == '-' || part[0] == '+')
        throw std::invalid_argument("");
      v = std::stoull(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size())
      throw ConfigError("--steps " + text + ": expected A:B, two step numbers");
    return v;
  };
  if (colon == std::string::npos)
    throw ConfigError("--steps " + text + ": expected A:B, two step numbers");
  const std::uint64_t a = number(text.substr(0, colon)),
                      b = number(text.substr(colon + 1));
  if (a >= b)
    throw ConfigError("--steps " + text + ": A must be below B (steps A to B-1)");
  return {a, b};
}

std::string key_text(const std::vector<std::uint64_t>& key) {
  std::string s = "(";
  for (std::size_t i = 0; i < key.size(); ++i)
    s += (i ? ", " : "") + std::to_string(key[i]);
  return s + ")";
}

int run_order(OrderArgs a) {
  LedgerQuery q;
  q.options = a.options;
  q.seed = a.seed;
  q.epoch = a.epoch;
  q.rank = a.rank;
  q.worker = a.worker;
  if (a.step) {
    q.first_step = *a.step;
    q.end_step = *a.step + 1;
  } else if (!a.steps.empty()) {
    std::tie(q.first_step, q.end_step) = parse_steps(a.steps);
  } else {
    throw ConfigError("give --step K or --steps A:B");
  }
  std::string what;
  if (a.size) {
    q.dataset_size = *a.size;
    what = std::to_string(*a.size) + " samples";
  } else {
    const std::unique_ptr<Dataset> data = tools::open_dataset(a.data, "");
    q.dataset_size = data->size();
    q.shard_sizes = data->shard_sizes();
    what = data->describe();
  }
  const std::vector<LedgerEntry> entries = ledger(q);
  if (!a.json.empty()) {
    std::ofstream file;
    if (a.json != "-") {
      file.open(a.json);
      if (!file) throw ConfigError("--json " + a.json + ": cannot be written");
    }
    std::ostream& out = a.json == "-" ? std::cout : file;
    for (const LedgerEntry& e : entries) {
      nlohmann::json j{{"epoch", e.epoch},   {"step", e.step}, {"rank", e.rank},
                       {"worker", e.worker}, {"slot", e.slot}, {"index", e.index},
                       {"stream", e.stream}};
      j["fingerprint"] =
          e.fingerprint ? nlohmann::json(*e.fingerprint) : nlohmann::json();
      out << j.dump() << "\n";
    }
    if (!out) throw ConfigError("--json " + a.json + ": write failed");
    return kExitOk;
  }
  const LoaderOptions& o = a.options;
  std::printf("%s, seed %llu, batch %llu x %llu ranks (%s), %d workers, epoch %llu\n",
              what.c_str(), static_cast<unsigned long long>(a.seed),
              static_cast<unsigned long long>(o.batch_size),
              static_cast<unsigned long long>(o.world_size),
              tools::enum_name(tools::partition_names(), o.partition).c_str(),
              o.num_workers, static_cast<unsigned long long>(a.epoch));
  std::printf("%6s %6s %6s %6s %12s  %-22s %s\n", "step", "rank", "worker", "slot",
              "index", "stream", "fingerprint");
  for (const LedgerEntry& e : entries) {
    char fp[24] = "-";
    if (e.fingerprint)
      std::snprintf(fp, sizeof fp, "%016llx",
                    static_cast<unsigned long long>(*e.fingerprint));
    std::printf("%6llu %6llu %6d %6llu %12llu  %-22s %s\n",
                static_cast<unsigned long long>(e.step),
                static_cast<unsigned long long>(e.rank), e.worker,
                static_cast<unsigned long long>(e.slot),
                static_cast<unsigned long long>(e.index), key_text(e.stream).c_str(), fp);
  }
  return kExitOk;
}

}  // namespace

void add_order_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<OrderArgs>();
  args->options.batch_size = 32;
  args->options.num_workers = 2;
  CLI::App* cmd = app.add_subcommand(
      "order",
      "Print the samples of step K (or steps A to B-1) of an epoch, for every rank or\n"
      "one: rank, worker, slot in the batch, index, stream key and, with --seeding\n"
      "sample, its fingerprint. Computed from the configuration; nothing is read.");
  auto* data = cmd->add_option("--data", args->data, tools::data_spec_help());
  auto* size =
      cmd->add_option("--size", args->size, "A data set size alone, instead of --data")
          ->check(tools::non_negative_integer());
  data->excludes(size);
  cmd->add_option("--seed", args->seed, "Base seed of the run")
      ->check(tools::non_negative_integer())
      ->required();
  cmd->add_option("--batch-size", args->options.batch_size, "Batch size per rank")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--workers", args->options.num_workers, "Workers per rank")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  cmd->add_option("--world-size", args->options.world_size, "Ranks")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tools::add_partition_option(*cmd, args->options.partition);
  cmd->add_flag("--shuffle", args->options.shuffle, "The run shuffles");
  tools::add_order_option(*cmd, args->options.order, &args->options.shuffle_block);
  cmd->add_flag("--drop-last", args->options.drop_last,
                "The run drops the last, short batch");
  static const tools::EnumNames<SeedScope> seedings{{"full", SeedScope::kWorker},
                                                    {"sample", SeedScope::kSample}};
  tools::add_enum_option(*cmd, "--seeding", args->options.seeding, seedings,
                         "full (worker streams) or sample (a stream per sample)");
  cmd->add_option("--epoch", args->epoch, "Epoch")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  auto* step = cmd->add_option("--step", args->step, "Step K of the epoch")
                   ->check(tools::non_negative_integer());
  auto* steps = cmd->add_option("--steps", args->steps, "Steps A:B (A to B-1)");
  step->excludes(steps);
  cmd->add_option("--rank", args->rank, "Only this rank")
      ->check(tools::non_negative_integer());
  cmd->add_option("--worker", args->worker, "Only the steps this worker fills")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
      "--json", args->json,
      "Write one JSON object per sample (epoch, step, rank, worker, slot, index, "
      "stream, fingerprint) to this file; '-' for stdout");
  cmd->callback([args, &action, data, size] {
    if (data->count() == 0 && size->count() == 0)
      throw CLI::RequiredError("--data or --size");
    action = [args] { return run_order(*args); };
  });
}

}  // namespace seedloader::audit
