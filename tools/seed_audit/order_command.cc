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
#include "tools/common/enum_option.h"
#include "tools/common/loader_flags.h"
#include "tools/common/number_checks.h"
#include "tools/seed_audit/commands.h"
#include "tools/seed_audit/ledger_flags.h"

namespace seedloader::audit {
namespace {

struct OrderArgs {
  LedgerFlags config;
  std::optional<std::uint64_t> step;
  std::string steps;  // "A:B"
  std::optional<std::uint64_t> rank;
  std::optional<int> worker;
  std::string json;
};

// "A:B" as [A, B); A and B decimal integers, A < B.
std::pair<std::uint64_t, std::uint64_t> parse_steps(const std::string& text) {
  const auto range = tools::parse_number_pair(text);
  if (!range) throw ConfigError("--steps " + text + ": expected A:B, two step numbers");
  if (range->first >= range->second)
    throw ConfigError("--steps " + text + ": A must be below B (steps A to B-1)");
  return *range;
}

std::string key_text(const std::vector<std::uint64_t>& key) {
  std::string s = "(";
  for (std::size_t i = 0; i < key.size(); ++i)
    s += (i ? ", " : "") + std::to_string(key[i]);
  return s + ")";
}

int run_order(const OrderArgs& a) {
  std::string what;
  LedgerQuery q = ledger_query(a.config, what);
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
  // Each entry is written as the ledger makes it: memory for the epoch's order, none
  // for the entries, whatever the number of steps. The file is opened, and the
  // header printed, at the first entry, after the query's checks passed.
  if (!a.json.empty()) {
    std::ofstream file;
    std::ostream* out = nullptr;
    const auto open = [&] {
      if (out != nullptr) return;
      if (a.json != "-") {
        file.open(a.json);
        if (!file) throw ConfigError("--json " + a.json + ": cannot be written");
      }
      out = a.json == "-" ? &std::cout : &file;
    };
    std::uint64_t written = 0;
    ledger(q, [&](const LedgerEntry& e) {
      open();
      nlohmann::json j{{"epoch", e.epoch},   {"step", e.step}, {"rank", e.rank},
                       {"worker", e.worker}, {"slot", e.slot}, {"index", e.index},
                       {"stream", e.stream}};
      j["fingerprint"] =
          e.fingerprint ? nlohmann::json(*e.fingerprint) : nlohmann::json();
      j["skipped"] = e.skipped;
      if (q.mixture) {
        j["source"] = q.mixture->names[e.source];
        j["source_index"] = e.source_index;
        j["source_epoch"] = e.stream_epoch;
      }
      *out << j.dump() << "\n";
      // A full disk or a closed pipe ends the run now, not after every step.
      if (++written % 65536 == 0 && !*out)
        throw ConfigError("--json " + a.json + ": write failed");
    });
    open();
    out->flush();
    if (!*out) throw ConfigError("--json " + a.json + ": write failed");
    return kExitOk;
  }
  const LoaderOptions& o = q.options;
  bool headed = false;
  const auto header = [&] {
    if (headed) return;
    headed = true;
    std::printf("%s, seed %llu, batch %llu x %llu ranks (%s), %d workers, epoch %llu\n",
                what.c_str(), static_cast<unsigned long long>(q.seed),
                static_cast<unsigned long long>(o.batch_size),
                static_cast<unsigned long long>(o.world_size),
                tools::enum_name(tools::partition_names(), o.partition).c_str(),
                o.num_workers, static_cast<unsigned long long>(q.epoch));
    std::printf("%6s %6s %6s %6s %12s  %-22s %s%s\n", "step", "rank", "worker", "slot",
                "index", "stream", "fingerprint", q.mixture ? "      source[index]" : "");
  };
  ledger(q, [&](const LedgerEntry& e) {
    header();
    char fp[24] = "-";
    if (e.fingerprint)
      std::snprintf(fp, sizeof fp, "%016llx",
                    static_cast<unsigned long long>(*e.fingerprint));
    std::string where;
    if (q.mixture)
      where =
          "  " + q.mixture->names[e.source] + "[" + std::to_string(e.source_index) + "]";
    std::printf("%6llu %6llu %6d %6llu %12llu  %-22s %s%s%s\n",
                static_cast<unsigned long long>(e.step),
                static_cast<unsigned long long>(e.rank), e.worker,
                static_cast<unsigned long long>(e.slot),
                static_cast<unsigned long long>(e.index), key_text(e.stream).c_str(), fp,
                where.c_str(), e.skipped ? "  skipped" : "");
  });
  header();
  return kExitOk;
}

}  // namespace

void add_order_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<OrderArgs>();
  CLI::App* cmd = app.add_subcommand(
      "order",
      "Print the samples of step K (or steps A to B-1) of an epoch, for every rank or\n"
      "one: rank, worker, slot in the batch, index, stream key and, with --seeding\n"
      "sample, its fingerprint (for a mixture, mix:..., also its source and index\n"
      "there). Computed from the configuration; nothing is read: --data is opened\n"
      "for its size and shards alone (imagefolder:, tar: and mix: of them need no\n"
      "transform), and the entries stream out, any number of steps in the memory of\n"
      "the epoch's order.");
  add_ledger_flags(*cmd, args->config, "Epoch");
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
      "stream, fingerprint, skipped; for a mixture source, source_index, "
      "source_epoch) to this file; '-' for stdout. Each line is written as it is "
      "computed: any number of steps in the memory of the epoch's order");
  cmd->callback([args, &action] {
    require_data(args->config);
    action = [args] { return run_order(*args); };
  });
}

}  // namespace seedloader::audit
