// seed-audit trace: audit a per-sample trace recorded from any loader (JSONL).
#include <charconv>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/json_depth.h"
#include "seedloader/error.h"
#include "tools/common/input_file.h"
#include "tools/common/number_checks.h"
#include "tools/seed_audit/commands.h"
#include "tools/seed_audit/expected_order.h"
#include "tools/seed_audit/ledger_flags.h"
#include "tools/seed_audit/report_output.h"
#include "tools/seed_audit/trace_audit.h"

namespace seedloader::audit {
namespace {

struct TraceArgs {
  std::string path;
  std::optional<std::uint64_t> dataset_size;
  std::uint64_t allowed_missing = 0;
  std::optional<std::uint64_t> global_batch;
  std::string json;
  std::string expect;                     // the flags of `order`, as one string
  std::vector<std::string> source_sizes;  // NAME=N
  std::string mixture;                    // a mixture state's JSON file
};

// The configuration --expect names, parsed with `order`'s flags.
LedgerQuery expected_config(const std::string& flags) {
  CLI::App parser{"--expect"};
  LedgerFlags config;
  add_ledger_flags(parser, config, "");
  try {
    parser.parse(flags, false);
    require_data(config);
  } catch (const CLI::ParseError& e) {
    throw ConfigError("--expect \"" + flags + "\": " + e.what());
  }
  std::string what;
  LedgerQuery q = ledger_query(config, what);
  if (q.mixture)
    throw ConfigError("--expect \"" + flags +
                      "\": a mixture's trace names each sample by its source and "
                      "index there; check it with --source-size and --mixture instead");
  return q;
}

int run_trace(const TraceArgs& a) {
  std::optional<LedgerQuery> expected;
  if (!a.expect.empty()) expected = expected_config(a.expect);  // before the long audit
  AuditOptions options{a.dataset_size, a.allowed_missing, a.global_batch, {}};
  for (const std::string& given : a.source_sizes) {
    const std::size_t eq = given.rfind('=');
    std::uint64_t n = 0;
    const char* end = given.data() + given.size();
    const auto [p, ec] =
        eq == std::string::npos || eq == 0
            ? std::from_chars_result{given.data(), std::errc::invalid_argument}
            : std::from_chars(given.data() + eq + 1, end, n);
    if (ec != std::errc() || p != end || n == 0)
      throw ConfigError("--source-size " + given + ": expected NAME=N, N > 0");
    options.source_sizes.emplace(given.substr(0, eq), n);
  }
  if (!a.mixture.empty()) {
    if (!a.global_batch)
      throw ConfigError("--mixture needs --global-batch G, the run's global batch");
    const std::string where = "--mixture " + a.mixture;
    options.mixture = mixture_expectation(
        where, tools::read_input_file(where, a.mixture, tools::kMaxJsonFileBytes),
        *a.global_batch);
    options.pad_multiple.reset();  // a mixture's steps are whole: nothing is padded
  }
  Report report = audit_trace_file(a.path, options);
  if (expected) {
    std::uint64_t checked = 0;
    if (auto mismatch = check_expected_order(a.path, *expected, checked))
      report.findings.push_back(std::move(*mismatch));
  }
  return emit_report(report, a.json);
}

}  // namespace

void add_trace_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "trace",
      "Audit a trace recorded from any loader: one JSON object per line and sample,\n"
      "  "
      "{\"rank\":0,\"epoch\":0,\"worker\":1,\"batch\":3,\"index\":17,\"rng\":\"<state>\"}"
      "\n"
      "with optional \"content\", \"aug\" and \"run\" (0, 1, ...: which run of a job\n"
      "that restarted; absent: 0), and for a mixture's sample \"source\" and\n"
      "\"source_epoch\" (\"index\" then in its source: checked within each source's\n"
      "epochs). \"rng\" is any string equal exactly when the random\n"
      "state the sample started from is equal (tools/torch_trace.py records PyTorch\n"
      "pipelines). Exit 0 clean, 1 findings, 2 usage or input error.");
  cmd->add_option("FILE", args->path, "Trace file (JSONL)")->required();
  cmd->add_option("--dataset-size", args->dataset_size,
                  "Dataset size N: check that every epoch covers [0, N) (coverage)")
      ->check(tools::non_negative_integer());
  cmd->add_option("--allow-missing", args->allowed_missing,
                  "Samples an epoch may leave out by design (drop_last), for coverage")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_option("--global-batch", args->global_batch,
                  "Each epoch's order is padded to a multiple of G (the elastic "
                  "partition's global batch); default: the ranks of each run")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber);
  cmd->add_option("--source-size", args->source_sizes,
                  "NAME=N: a mixture source's size, to check that each of its epochs "
                  "(but the trace's last) covers [0, N); repeatable");
  cmd->add_option("--mixture", args->mixture,
                  "A mixture's state as JSON (Python: state_dict()[\"mixture\"]; "
                  "ddp-train: its checkpoint's metadata \"mixture\"): check that each "
                  "global step drew its sources as the weights of its history say "
                  "(mixture_composition); needs --global-batch. A regular file of at "
                  "most " +
                      std::to_string(tools::kMaxJsonFileBytes >> 20) +
                      " MiB, its JSON nested at most " + std::to_string(kMaxJsonDepth) +
                      " deep");
  cmd->add_option(
      "--expect", args->expect,
      "The configuration the run had, as `order` takes it (\"--size N --seed S "
      "--batch-size B --world-size W --shuffle ...\"): every step of the trace "
      "must hold its samples (order_mismatch names the first that does not, "
      "and what it matches instead)");
  add_json_report_option(*cmd, args->json);
  cmd->callback([args, &action] { action = [args] { return run_trace(*args); }; });
}

}  // namespace seedloader::audit
