// TrainOptions: everything ddp-train is configured with, as one typed struct, and
// the CLI11 options that fill it; the named choices are enums, mapped from their
// names once at parse time. validate() checks the combinations CLI11 cannot
// (throws ConfigError naming the option). to_json() gives the fields a checkpoint
// must agree on to resume exactly. A plain value type; copy it freely.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "seedloader/loader_options.h"
#include "tools/common/enum_option.h"
#include "tools/common/loader_flags.h"

namespace seedloader::train {

enum class Loss { kXent, kMse };                          // xent (integer labels) | mse
enum class Optimizer { kSgd, kAdamW };                    // sgd | adamw
enum class Backend { kAuto, kMpi, kNccl };                // auto | mpi | nccl
enum class Mode { kDdp, kDataParallel, kModelParallel };  // ddp | dp | ddp-mp

// Each choice's command-line (and checkpoint config) names.
const tools::EnumNames<Loss>& loss_names();
const tools::EnumNames<Optimizer>& optimizer_names();
const tools::EnumNames<Backend>& backend_names();
const tools::EnumNames<Mode>& mode_names();
const tools::EnumNames<SeedScope>& seeding_names();  // full (worker) | sample

// data, transform, workers and batch_size (per rank; dp: per step, scattered to
// replicas) come from LoaderFlags.
struct TrainOptions : tools::LoaderFlags {
  std::string model = "mlp:10,10,5";
  Loss loss = Loss::kXent;
  std::uint64_t epochs = 1;
  std::optional<std::uint64_t> steps;  // total optimizer steps; overrides epochs
  Optimizer optimizer = Optimizer::kSgd;
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  std::optional<std::uint64_t> seed;
  SeedScope seeding = SeedScope::kWorker;     // full: worker streams; sample: per sample
  Partition partition = Partition::kStrided;  // --partition
  // --canonical-nodes (elastic); unset: default_canonical_nodes() of the run's
  // first start, or the checkpoint's when resuming.
  std::optional<std::uint64_t> canonical_nodes;
  // elastic: samples per step over all ranks (G); unset: batch_size x world size.
  std::optional<std::uint64_t> global_batch_size;
  bool no_shuffle = false;
  ShuffleOrder order = ShuffleOrder::kNumpy;  // --order
  std::uint64_t shuffle_block = 0;            // --shuffle-block
  Backend backend = Backend::kAuto;
  double bucket_mb = 25.0;
  Mode mode = Mode::kDdp;
  std::vector<int> devices;  // dp: replica devices
  int split = 0;             // ddp-mp: layers on the first device
  std::string init, save, resume, log_json;
  std::string trace;  // per-sample JSON lines (see trainer.h), appended by rank 0
  std::uint64_t checkpoint_every = 0;
  bool progress = false;
  // --skip-steps A:B (global steps A to B-1; repeatable) and --skip-samples FILE
  // (sample indices, one a line): declared skips (LoaderOptions::skip), added to a
  // resumed checkpoint's.
  std::vector<std::string> skip_steps;
  std::string skip_samples;
};

// The sample indices of --skip-samples FILE (blank lines and lines from '#' on are
// ignored). Throws ConfigError naming the file and line of anything else.
std::vector<std::uint64_t> skip_sample_indices(const TrainOptions& o);

// Registers every ddp-train option on `app`, filling `o`.
void add_train_options(CLI::App& app, TrainOptions& o);

// Throws ConfigError for a combination no single option can reject.
void validate(const TrainOptions& o);

// The per-rank batch size in a world of `world_size` ranks: --batch-size, or under
// elastic G / world_size. Throws ConfigError naming G and the world size when the
// world size does not divide G.
std::uint64_t rank_batch_size(const TrainOptions& o, std::uint64_t world_size);

// The samples of one step over all ranks: G under elastic (--global-batch-size, or
// --batch-size x world_size), batch_size x world_size under strided.
std::uint64_t global_batch_size(const TrainOptions& o, std::uint64_t world_size);

// The options a resumed run in a world of `world_size` ranks must share with its
// checkpoint, as a JSON string. Strided: batch_size (per rank). Elastic: partition
// and global_batch_size instead, so another world size dividing G may resume, and
// canonical_nodes (the run's, resolved; 0: no split).
std::string resume_config_json(const TrainOptions& o, std::uint64_t world_size = 1,
                               std::uint64_t canonical_nodes = 0);

}  // namespace seedloader::train
