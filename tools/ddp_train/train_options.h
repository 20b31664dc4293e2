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
  SeedScope seeding = SeedScope::kWorker;  // full: worker streams; sample: per sample
  bool no_shuffle = false;
  ShuffleOrder order = ShuffleOrder::kNumpy;  // --order
  Backend backend = Backend::kAuto;
  double bucket_mb = 25.0;
  Mode mode = Mode::kDdp;
  std::vector<int> devices;  // dp: replica devices
  int split = 0;             // ddp-mp: layers on the first device
  std::string init, save, resume, log_json;
  std::uint64_t checkpoint_every = 0;
  bool progress = false;
};

// Registers every ddp-train option on `app`, filling `o`.
void add_train_options(CLI::App& app, TrainOptions& o);

// Throws ConfigError for a combination no single option can reject.
void validate(const TrainOptions& o);

// The options a resumed run must share with its checkpoint, as a JSON string.
std::string resume_config_json(const TrainOptions& o);

}  // namespace seedloader::train
