// seed-audit run: run a pipeline the way training would, for every rank of a
// simulated world, and audit every sample's random stream.
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "seedloader/data_loader.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "tools/common/data_spec.h"
#include "tools/common/loader_flags.h"
#include "tools/common/number_checks.h"
#include "tools/common/progress_bar.h"
#include "tools/seed_audit/auditor.h"
#include "tools/seed_audit/commands.h"
#include "tools/seed_audit/report_output.h"
#include "tools/seed_audit/seeding_dataset.h"

namespace seedloader::audit {
namespace {

// data, transform, batch_size, workers and timeout_s come from LoaderFlags.
struct RunArgs : tools::LoaderFlags {
  RunArgs() {
    transform = "rrc:32,hflip";
    workers = 4;
  }
  std::uint64_t epochs = 2;
  std::uint64_t world_size = 1;
  std::optional<std::uint64_t> seed;
  bool shuffle = false;
  ShuffleOrder order = ShuffleOrder::kNumpy;
  bool drop_last = false;
  bool persistent_workers = false;
  SeedingMode seeding = SeedingMode::kFull;
  std::string json;
  bool progress = false;
};

int run_pipeline(const RunArgs& a) {
  const SeedingMode mode = a.seeding;
  std::unique_ptr<Dataset> data = tools::open_dataset(a.data, a.transform);
  const std::uint64_t seed = a.seed ? *a.seed : draw_base_seed("seed-audit");
  const std::uint64_t n = data->size();
  // drop_last drops each rank's last short batch: up to batch - 1 samples a rank
  // (the sampler itself pads, as PyTorch's DistributedSampler does by default).
  const std::uint64_t allowed_missing =
      a.drop_last ? a.world_size * (a.batch_size - 1) : 0;
  Auditor auditor(AuditOptions{n, allowed_missing});

  std::optional<tools::ProgressBar> bar;
  for (std::uint64_t rank = 0; rank < a.world_size; ++rank) {
    // Each simulated rank is its own process: its dataset (and any generator the
    // dataset owns) starts from the state the program gives it, as in a real run.
    SeedingDataset dataset(*data, mode, seed);
    const std::size_t fp_field = dataset.fingerprint_field();
    LoaderOptions opt;
    opt.batch_size = a.batch_size;
    opt.num_workers = a.workers;
    opt.shuffle = a.shuffle;
    opt.order = a.order;
    opt.seed = seed;
    opt.drop_last = a.drop_last;
    opt.persistent_workers = a.persistent_workers;
    opt.rank = rank;
    opt.world_size = a.world_size;
    opt.timeout = std::chrono::seconds(a.timeout_s);
    opt.seeding = dataset.loader_scope();
    opt.worker_init = [&dataset](int worker, std::uint64_t) {
      dataset.on_worker_start(worker);
    };
    DataLoader loader(dataset, opt);
    if (!bar) {
      bar.emplace(a.progress || isatty(STDERR_FILENO),
                  loader.num_batches() * a.epochs * a.world_size);
    }
    for (std::uint64_t epoch = 0; epoch < a.epochs; ++epoch) {
      dataset.set_epoch(epoch);
      loader.set_epoch(epoch);
      for (const Batch& b : loader) {
        auto indices = b.indices();
        auto fps = b.tensor(fp_field).values<std::int64_t>();
        auto used = b.tensor(fp_field + 1).values<std::uint8_t>();
        for (std::size_t i = 0; i < indices.size(); ++i) {
          SampleRecord r;
          r.rank = static_cast<std::uint32_t>(rank);
          r.epoch = static_cast<std::uint32_t>(epoch);
          r.worker = static_cast<std::uint32_t>(b.worker());
          r.batch = b.number();
          r.index = indices[i];
          r.rng = std::bit_cast<std::uint64_t>(fps[i]);
          r.has_rng = used[i] != 0;
          auditor.add(r);
        }
        bar->add(1, indices.size());
      }
    }
  }
  if (bar) bar->finish();
  // The summary goes with the text report: to stderr when the JSON takes stdout.
  std::FILE* text = a.json == "-" ? stderr : stdout;
  std::fprintf(text, "%s, %llu ranks x %d workers x %llu epochs, seeding %s, seed %llu\n",
               data->describe().c_str(), static_cast<unsigned long long>(a.world_size),
               a.workers, static_cast<unsigned long long>(a.epochs),
               seeding_mode_name(mode), static_cast<unsigned long long>(seed));
  std::fflush(text);
  return emit_report(auditor.report(), a.json);
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a pipeline as training would, for every rank of a simulated world (each\n"
      "rank its own DataLoader), and audit every sample's random stream. --seeding\n"
      "full (seedloader's) and sample must be clean; torch (PyTorch's worker seeds,\n"
      "rank not mixed in) and naive (every worker copies the parent's generator)\n"
      "show the findings. Exit 0 clean, 1 findings, 2 usage or input error.");
  tools::EnumNames<SeedingMode> seeding_names;
  for (SeedingMode m : {SeedingMode::kFull, SeedingMode::kSample, SeedingMode::kTorch,
                        SeedingMode::kNaive})
    seeding_names.emplace_back(seeding_mode_name(m), m);
  tools::LoaderFlagOptions lf = tools::add_loader_options(
      *cmd, *args, args->seeding, seeding_names, "full, sample, torch or naive");
  lf.transform->description(
      "Transform chain (transforms/spec.h), e.g. crop:32:4,hflip; '' for none");
  lf.batch_size->description("Batch size");
  lf.workers->description("Worker processes per rank (0: inline)");
  cmd->add_option("--epochs", args->epochs, "Epochs")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--world-size", args->world_size, "Simulated ranks")
      ->check(tools::non_negative_integer())
      ->check(CLI::Range(std::uint64_t{1}, kMaxRank + 1))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed,
                  "Base seed (drawn from the OS and printed if unset)")
      ->check(tools::non_negative_integer());
  cmd->add_flag("--shuffle", args->shuffle,
                "Shuffle (DistributedSampler, same seed per rank)");
  tools::add_order_option(*cmd, args->order);
  cmd->add_flag("--drop-last", args->drop_last, "Drop the last, short batch");
  cmd->add_flag("--persistent-workers", args->persistent_workers,
                "Keep workers across epochs");
  add_json_report_option(*cmd, args->json);
  cmd->add_flag("--progress", args->progress,
                "Progress bar on stderr even when it is not a terminal");
  cmd->callback([args, &action] { action = [args] { return run_pipeline(*args); }; });
}

}  // namespace seedloader::audit
