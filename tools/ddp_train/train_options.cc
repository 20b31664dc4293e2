#include "tools/ddp_train/train_options.h"

#include <nlohmann/json.hpp>

#include "rng/error.h"
#include "tools/seed_audit/data_spec.h"

namespace seedloader::train {

Mode TrainOptions::parsed_mode() const {
  if (mode == "dp") return Mode::kDataParallel;
  if (mode == "ddp-mp") return Mode::kModelParallel;
  return Mode::kDdp;
}

void add_train_options(CLI::App& app, TrainOptions& o) {
  app.add_option("--data", o.data,
                 audit::data_spec_help() +
                     ", or tensors:FILE.safetensors (field 0 input, "
                     "field 1 target)")
      ->required();
  app.add_option("--transform", o.transform,
                 "Transform chain (transforms/spec.h), e.g. crop:32:4,hflip");
  app.add_option("--model", o.model, "mlp:IN,H1,...,OUT or cnn:small")
      ->capture_default_str();
  app.add_option("--loss", o.loss, "xent (integer labels) or mse (float targets)")
      ->check(CLI::IsMember({"xent", "mse"}))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "Samples per rank per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* epochs = app.add_option("--epochs", o.epochs, "Epochs")
                     ->check(CLI::PositiveNumber)
                     ->capture_default_str();
  app.add_option("--steps", o.steps, "Total optimizer steps (instead of --epochs)")
      ->check(CLI::PositiveNumber)
      ->excludes(epochs);
  app.add_option("--optimizer", o.optimizer, "sgd or adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "Learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "Weight decay")->capture_default_str();
  app.add_option("--workers", o.workers, "Loader worker processes per rank (0: inline)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Base seed (drawn from the OS and printed if unset)");
  app.add_option("--seeding", o.seeding,
                 "full: worker streams (1, epoch, rank, worker); sample: per-sample "
                 "streams (2, epoch, index), identical for any --workers")
      ->check(CLI::IsMember({"full", "sample"}))
      ->capture_default_str();
  app.add_flag("--no-shuffle", o.no_shuffle, "The sampler's unshuffled order");
  app.add_option("--backend", o.backend, "auto (nccl when a GPU is visible), mpi or nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}))
      ->capture_default_str();
  app.add_option("--bucket-mb", o.bucket_mb, "Gradient bucket size in MB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--mode", o.mode,
                 "ddp (one process per rank), dp (one process, replicas on --devices), "
                 "ddp-mp (model split over two devices per rank, see --split)")
      ->check(CLI::IsMember({"ddp", "dp", "ddp-mp"}))
      ->capture_default_str();
  app.add_option("--devices", o.devices, "dp: replica devices, e.g. 0,1")->delimiter(',');
  app.add_option("--split", o.split, "ddp-mp: layers on the first device")
      ->check(CLI::PositiveNumber);
  app.add_option("--init", o.init, "Initial weights (safetensors, nn.Sequential names)");
  app.add_option("--save", o.save, "Write a checkpoint here at the end");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "Also write --save every N steps");
  app.add_option("--resume", o.resume, "Continue exactly from this checkpoint");
  app.add_option("--log-json", o.log_json, "Append one JSON line per epoch here");
  app.add_flag("--progress", o.progress,
               "Progress bar even when stderr is not a terminal");
}

void validate(const TrainOptions& o) {
  const Mode m = o.parsed_mode();
  if (m == Mode::kDataParallel && o.devices.empty())
    throw ConfigError("--mode dp needs --devices, e.g. --devices 0,1");
  if (m != Mode::kDataParallel && !o.devices.empty())
    throw ConfigError("--devices applies to --mode dp only");
  if (m == Mode::kModelParallel && o.split <= 0)
    throw ConfigError("--mode ddp-mp needs --split K (layers on the first device)");
  if (m != Mode::kModelParallel && o.split != 0)
    throw ConfigError("--split applies to --mode ddp-mp only");
  if (o.checkpoint_every > 0 && o.save.empty())
    throw ConfigError("--checkpoint-every needs --save FILE");
  for (int d : o.devices)
    if (d < 0) throw ConfigError("--devices: negative device " + std::to_string(d));
}

std::string resume_config_json(const TrainOptions& o) {
  nlohmann::json j;
  j["data"] = o.data;
  j["transform"] = o.transform;
  j["model"] = o.model;
  j["loss"] = o.loss;
  j["batch_size"] = o.batch_size;
  j["optimizer"] = o.optimizer;
  j["lr"] = o.lr;
  j["momentum"] = o.momentum;
  j["weight_decay"] = o.weight_decay;
  j["seeding"] = o.seeding;
  j["shuffle"] = !o.no_shuffle;
  j["mode"] = o.mode;
  j["split"] = o.split;
  j["devices"] = o.devices.size();
  return j.dump();
}

}  // namespace seedloader::train
