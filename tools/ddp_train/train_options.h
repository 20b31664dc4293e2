// TrainOptions: everything ddp-train is configured with, as one typed struct, and
// the CLI11 options that fill it. validate() checks the combinations CLI11 cannot
// (throws ConfigError naming the option). to_json() gives the fields a checkpoint
// must agree on to resume exactly. A plain value type; copy it freely.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/loader_options.h"

namespace seedloader::train {

enum class Mode { kDdp, kDataParallel, kModelParallel };

struct TrainOptions {
  std::string data;
  std::string transform;
  std::string model = "mlp:10,10,5";
  std::string loss = "xent";      // xent | mse
  std::uint64_t batch_size = 32;  // per rank (dp: per step, scattered to replicas)
  std::uint64_t epochs = 1;
  std::optional<std::uint64_t> steps;  // total optimizer steps; overrides epochs
  std::string optimizer = "sgd";       // sgd | adamw
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  int workers = 2;
  std::optional<std::uint64_t> seed;
  std::string seeding = "full";  // full (worker streams) | sample (per-sample streams)
  bool no_shuffle = false;
  std::string backend = "auto";  // auto | mpi | nccl
  double bucket_mb = 25.0;
  std::string mode = "ddp";  // ddp | dp | ddp-mp
  std::vector<int> devices;  // dp: replica devices
  int split = 0;             // ddp-mp: layers on the first device
  std::string init, save, resume, log_json;
  std::uint64_t checkpoint_every = 0;
  bool progress = false;

  Mode parsed_mode() const;
  SeedScope seed_scope() const {
    return seeding == "sample" ? SeedScope::kSample : SeedScope::kWorker;
  }
};

// Registers every ddp-train option on `app`, filling `o`.
void add_train_options(CLI::App& app, TrainOptions& o);

// Throws ConfigError for a combination no single option can reject.
void validate(const TrainOptions& o);

// The options a resumed run must share with its checkpoint, as a JSON string.
std::string resume_config_json(const TrainOptions& o);

}  // namespace seedloader::train
