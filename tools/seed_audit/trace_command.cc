// seed-audit trace: audit a per-sample trace recorded from any loader (JSONL).
#include <memory>
#include <optional>
#include <string>

#include "rng/error.h"
#include "tools/seed_audit/auditor.h"
#include "tools/seed_audit/commands.h"
#include "tools/seed_audit/report_output.h"
#include "tools/seed_audit/trace_reader.h"

namespace seedloader::audit {
namespace {

struct TraceArgs {
  std::string path;
  std::optional<std::uint64_t> dataset_size;
  std::uint64_t allowed_missing = 0;
  std::string json;
};

int run_trace(const TraceArgs& a) {
  Auditor auditor(AuditOptions{a.dataset_size, a.allowed_missing});
  std::uint64_t n = read_trace(a.path, [&](const SampleRecord& r) { auditor.add(r); });
  if (n == 0) throw DataError("trace " + a.path + " holds no samples");
  return emit_report(auditor.report(), a.json);
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
      "with optional \"content\" and \"aug\". \"rng\" is any string equal exactly when\n"
      "the random state the sample started from is equal (tools/torch_trace.py\n"
      "records PyTorch pipelines). Exit 0 clean, 1 findings, 2 usage or input error.");
  cmd->add_option("FILE", args->path, "Trace file (JSONL)")->required();
  cmd->add_option("--dataset-size", args->dataset_size,
                  "Dataset size N: check that every epoch covers [0, N) (coverage)");
  cmd->add_option("--allow-missing", args->allowed_missing,
                  "Samples an epoch may leave out by design (drop_last), for coverage")
      ->capture_default_str();
  add_json_report_option(*cmd, args->json);
  cmd->callback([args, &action] { action = [args] { return run_trace(*args); }; });
}

}  // namespace seedloader::audit
