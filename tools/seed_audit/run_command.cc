// seed-audit run: run a pipeline the way training would, for every rank of a
// simulated world, and audit every sample's random stream.
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "seedloader/batch_sampler.h"
#include "seedloader/data_loader.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"
#include "tools/common/data_spec.h"
#include "tools/common/enum_option.h"
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
  std::uint64_t shuffle_block = 0;
  Partition partition = Partition::kStrided;
  bool drop_last = false;
  bool persistent_workers = false;
  SeedingMode seeding = SeedingMode::kFull;
  std::optional<std::uint64_t> resume_at;
  std::optional<std::uint64_t> resume_world_size;
  std::string resume_data;  // run 1's --data: a mixture with other weights
  std::string json;
  bool progress = false;
};

// One run of the simulated job: every rank of a world, from batch `start_batch`
// of epoch 0 (a resumed run) to the end of epoch `epochs` - 1, or only to batch
// `stop_batch` of epoch 0 when set (a run that fails there).
struct Leg {
  std::uint32_t run = 0;
  std::uint64_t world_size = 1;
  std::uint64_t batch_size = 1;  // per rank
  std::uint64_t epochs = 1;
  std::uint64_t start_batch = 0;
  std::optional<std::uint64_t> stop_batch;
};

// The job: one run, or under --resume-at a run that stops at batch STEP of epoch 0
// and one that resumes that epoch at --resume-world-size, where a per-rank
// checkpoint (strided) or the global batch reached (elastic) says. Throws
// ConfigError for a restart the partition cannot express.
std::vector<Leg> plan_legs(const RunArgs& a) {
  if (!a.resume_at) return {Leg{0, a.world_size, a.batch_size, a.epochs, 0, {}}};
  const std::uint64_t step = *a.resume_at;
  const std::uint64_t world2 = *a.resume_world_size;
  std::uint64_t batch2 = a.batch_size;
  if (a.partition == Partition::kElastic) {
    const std::uint64_t global = a.batch_size * a.world_size;
    if (global % world2 != 0) {
      throw ConfigError("--resume-world-size " + std::to_string(world2) +
                        " does not divide the global batch " + std::to_string(global) +
                        " (--batch-size " + std::to_string(a.batch_size) +
                        " x --world-size " + std::to_string(a.world_size) +
                        "), which the elastic partition keeps across the restart");
    }
    batch2 = global / world2;
  }
  return {Leg{0, a.world_size, a.batch_size, 1, 0, step},
          Leg{1, world2, batch2, a.epochs, step, {}}};
}

LoaderOptions leg_options(const RunArgs& a, const Leg& leg, std::uint64_t rank,
                          std::uint64_t seed, SeedScope scope) {
  LoaderOptions opt;
  opt.batch_size = leg.batch_size;
  opt.num_workers = a.workers;
  opt.shuffle = a.shuffle;
  opt.order = a.order;
  opt.shuffle_block = a.shuffle_block;
  opt.seed = seed;
  opt.drop_last = a.drop_last;
  opt.persistent_workers = a.persistent_workers;
  opt.rank = rank;
  opt.world_size = leg.world_size;
  opt.partition = a.partition;
  opt.timeout = std::chrono::seconds(a.timeout_s);
  opt.seeding = scope;
  return opt;
}

// Batches one rank of `leg` loads in all, for the progress bar.
std::uint64_t leg_batches(const LoaderOptions& opt, const Leg& leg, const Dataset& data,
                          std::uint64_t seed) {
  const std::uint64_t per_epoch =
      batches_per_epoch({.samples = loader_sampler(data, opt, seed)->size(),
                         .batch_size = opt.batch_size,
                         .drop_last = opt.drop_last});
  if (leg.stop_batch) return std::min(*leg.stop_batch, per_epoch);
  const std::uint64_t all = per_epoch * leg.epochs;
  return all - std::min(leg.start_batch, per_epoch);
}

void run_leg(const RunArgs& a, const Dataset& data, std::uint64_t seed, const Leg& leg,
             Auditor& auditor, tools::ProgressBar& bar) {
  const auto* mixture = dynamic_cast<const MixtureDataset*>(&data);
  for (std::uint64_t rank = 0; rank < leg.world_size; ++rank) {
    // Each simulated rank is its own process: its dataset (and any generator the
    // dataset owns) starts from the state the program gives it, as in a real run.
    SeedingDataset dataset(data, a.seeding, seed);
    const std::size_t fp_field = dataset.fingerprint_field();
    LoaderOptions opt = leg_options(a, leg, rank, seed, dataset.loader_scope());
    opt.worker_init = [&dataset](int worker, std::uint64_t) {
      dataset.on_worker_start(worker);
    };
    DataLoader loader(dataset, opt);
    if (leg.stop_batch && *leg.stop_batch >= loader.num_batches()) {
      throw ConfigError("--resume-at " + std::to_string(*leg.stop_batch) +
                        " is not below the " + std::to_string(loader.num_batches()) +
                        " batches an epoch has on rank " + std::to_string(rank));
    }
    for (std::uint64_t epoch = 0; epoch < leg.epochs; ++epoch) {
      dataset.set_epoch(epoch);
      if (epoch == 0) {
        loader.resume(epoch, leg.start_batch);
      } else {
        loader.set_epoch(epoch);
      }
      std::uint64_t batches = 0;
      for (const Batch& b : loader) {
        if (epoch == 0 && leg.stop_batch && leg.start_batch + batches == *leg.stop_batch)
          break;  // the failure: the rest of the epoch is never loaded
        ++batches;
        auto indices = b.indices();
        auto stream_epochs = b.stream_epochs();
        auto fps = b.tensor(fp_field).values<std::int64_t>();
        auto used = b.tensor(fp_field + 1).values<std::uint8_t>();
        for (std::size_t i = 0; i < indices.size(); ++i) {
          SampleRecord r;
          r.run = leg.run;
          r.rank = static_cast<std::uint32_t>(rank);
          r.epoch = static_cast<std::uint32_t>(epoch);
          r.worker = static_cast<std::uint32_t>(b.worker());
          r.batch = b.number();
          r.index = indices[i];
          if (mixture != nullptr) {  // audited within its source's epochs
            const auto [source, local] = mixture->locate(indices[i]);
            r.source = mixture->sources()[source].name;
            if (stream_epochs[i] > kMaxEpoch)
              throw DataError(
                  "source '" + r.source + "' epoch " + std::to_string(stream_epochs[i]) +
                  " exceeds the audit's limit of " + std::to_string(kMaxEpoch));
            r.source_epoch = static_cast<std::uint32_t>(stream_epochs[i]);
            r.index = local;
          }
          r.rng = std::bit_cast<std::uint64_t>(fps[i]);
          r.has_rng = used[i] != 0;
          auditor.add(r);
        }
        bar.add(1, indices.size());
      }
    }
  }
}

int run_pipeline(const RunArgs& a) {
  if (a.resume_at.has_value() != a.resume_world_size.has_value()) {
    throw ConfigError("--resume-at and --resume-world-size go together");
  }
  if (!a.resume_data.empty() && !a.resume_at)
    throw ConfigError("--resume-data goes with --resume-at");
  std::unique_ptr<Dataset> data = tools::open_dataset(a.data, a.transform);
  const std::uint64_t seed = a.seed ? *a.seed : draw_base_seed("seed-audit");
  const std::uint64_t n = data->size();
  const std::vector<Leg> legs = plan_legs(a);
  // Each leg's data: run 1 reads --resume-data when given, a mixture with other
  // weights continuing from run 0's position as a checkpoint would carry it.
  std::vector<const Dataset*> leg_data(legs.size(), data.get());
  std::unique_ptr<Dataset> resumed;
  const auto* mixture = dynamic_cast<const MixtureDataset*>(data.get());
  if (!a.resume_data.empty()) {
    std::unique_ptr<Dataset> next = tools::open_dataset(a.resume_data, a.transform);
    const auto* next_mixture = dynamic_cast<const MixtureDataset*>(next.get());
    if (mixture == nullptr || next_mixture == nullptr)
      throw ConfigError(
          "--resume-data changes a mixture's weights: --data and "
          "--resume-data must both be mix:...");
    const std::uint64_t global = a.batch_size * a.world_size;
    resumed = std::make_unique<MixtureDataset>(resumed_mixture(
        *next_mixture, mixture_state(*mixture, global, seed, 0, *a.resume_at), global,
        seed));
    leg_data.back() = resumed.get();
  }
  AuditOptions audit{.dataset_size = n};
  if (mixture != nullptr) {  // counted within each source's epochs instead
    audit.dataset_size.reset();
    for (const Dataset* d : leg_data)
      for (const MixtureSource& s : static_cast<const MixtureDataset*>(d)->sources())
        audit.source_sizes[s.name] = s.dataset->size();
  }
  if (a.partition == Partition::kElastic) {
    // Padded (or, with drop_last, truncated) to a multiple of the global batch.
    const std::uint64_t global = a.batch_size * a.world_size;
    audit.pad_multiple = global;
    audit.allowed_missing = a.drop_last ? global - 1 : 0;
  } else if (a.drop_last) {
    // drop_last drops each rank's last short batch: up to batch - 1 samples a rank
    // (the sampler itself pads, as PyTorch's DistributedSampler does by default).
    for (const Leg& leg : legs) {
      audit.allowed_missing =
          std::max(audit.allowed_missing, leg.world_size * (leg.batch_size - 1));
    }
  }
  Auditor auditor(audit);

  // The options are checked (ConfigError) before anything is loaded.
  std::uint64_t total = 0;
  const SeedScope scope = SeedingDataset(*data, a.seeding, seed).loader_scope();
  for (const Leg& leg : legs) {
    LoaderOptions opt = leg_options(a, leg, 0, seed, scope);
    validate(opt, n);
  }
  for (std::size_t l = 0; l < legs.size(); ++l) {
    LoaderOptions opt = leg_options(a, legs[l], 0, seed, scope);
    total += leg_batches(opt, legs[l], *leg_data[l], seed) * legs[l].world_size;
  }
  tools::ProgressBar bar(a.progress || isatty(STDERR_FILENO), total);
  for (std::size_t l = 0; l < legs.size(); ++l)
    run_leg(a, *leg_data[l], seed, legs[l], auditor, bar);
  bar.finish();
  // The summary goes with the text report: to stderr when the JSON takes stdout.
  std::FILE* text = a.json == "-" ? stderr : stdout;
  std::fprintf(text, "%s, %llu ranks x %d workers x %llu epochs, seeding %s, seed %llu\n",
               data->describe().c_str(), static_cast<unsigned long long>(a.world_size),
               a.workers, static_cast<unsigned long long>(a.epochs),
               seeding_mode_name(a.seeding), static_cast<unsigned long long>(seed));
  if (a.resume_at) {
    std::fprintf(text,
                 "partition %s; run 0 stopped after batch %llu of epoch 0, run 1 "
                 "resumed it on %llu ranks\n",
                 tools::enum_name(tools::partition_names(), a.partition).c_str(),
                 static_cast<unsigned long long>(*a.resume_at),
                 static_cast<unsigned long long>(*a.resume_world_size));
    if (resumed)
      std::fprintf(text, "run 1 read %s from there, every source where run 0 left it\n",
                   resumed->describe().c_str());
  }
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
      "show the findings. --resume-at simulates a restart at another world size\n"
      "(resume_duplicate, resume_gap under --partition strided; clean under elastic).\n"
      "Exit 0 clean, 1 findings, 2 usage or input error.");
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
  tools::add_order_option(*cmd, args->order, &args->shuffle_block);
  tools::add_partition_option(*cmd, args->partition);
  cmd->add_option("--resume-at", args->resume_at,
                  "Simulate a restart: run 0 stops after STEP batches (per rank) of "
                  "epoch 0, run 1 resumes that epoch at --resume-world-size ranks "
                  "(strided: at batch STEP on every rank, as a per-rank checkpoint "
                  "does; elastic: at global batch STEP, the same global batch, "
                  "G / R2 samples a rank) and runs the remaining epochs; both runs "
                  "are audited together")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber);
  cmd->add_option("--resume-world-size", args->resume_world_size,
                  "Ranks of the resumed run (with --resume-at)")
      ->check(tools::non_negative_integer())
      ->check(CLI::Range(std::uint64_t{1}, kMaxRank + 1));
  cmd->add_option("--resume-data", args->resume_data,
                  "With --resume-at over a mixture (--data mix:...): run 1 reads this "
                  "mixture spec instead, other weights or a source added, continuing "
                  "every source from run 0's position as a checkpoint would");
  cmd->add_flag("--drop-last", args->drop_last, "Drop the last, short batch");
  cmd->add_flag("--persistent-workers", args->persistent_workers,
                "Keep workers across epochs");
  add_json_report_option(*cmd, args->json);
  cmd->add_flag("--progress", args->progress,
                "Progress bar on stderr even when it is not a terminal");
  cmd->callback([args, &action] { action = [args] { return run_pipeline(*args); }; });
}

}  // namespace seedloader::audit
