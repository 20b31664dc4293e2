#include "tools/ddp_train/train_options.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "seedloader/error.h"
#include "tools/common/data_spec.h"
#include "tools/common/number_checks.h"

namespace seedloader::train {

const tools::EnumNames<Loss>& loss_names() {
  static const tools::EnumNames<Loss> names{{"xent", Loss::kXent}, {"mse", Loss::kMse}};
  return names;
}

const tools::EnumNames<Optimizer>& optimizer_names() {
  static const tools::EnumNames<Optimizer> names{{"sgd", Optimizer::kSgd},
                                                 {"adamw", Optimizer::kAdamW}};
  return names;
}

const tools::EnumNames<Backend>& backend_names() {
  static const tools::EnumNames<Backend> names{
      {"auto", Backend::kAuto}, {"mpi", Backend::kMpi}, {"nccl", Backend::kNccl}};
  return names;
}

const tools::EnumNames<Mode>& mode_names() {
  static const tools::EnumNames<Mode> names{
      {"ddp", Mode::kDdp}, {"dp", Mode::kDataParallel}, {"ddp-mp", Mode::kModelParallel}};
  return names;
}

const tools::EnumNames<SeedScope>& seeding_names() {
  static const tools::EnumNames<SeedScope> names{{"full", SeedScope::kWorker},
                                                 {"sample", SeedScope::kSample}};
  return names;
}

void add_train_options(CLI::App& app, TrainOptions& o) {
  tools::LoaderFlagOptions lf = tools::add_loader_options(
      app, o, o.seeding, seeding_names(),
      "full: worker streams (1, epoch, rank, worker); sample: per-sample "
      "streams (2, epoch, index), identical for any --workers");
  lf.data->description(tools::data_spec_help() +
                       ", or tensors:FILE.safetensors (field 0 input, field 1 target)");
  lf.batch_size->description("Samples per rank per step");
  lf.workers->description("Loader worker processes per rank (0: inline)");
  app.add_option("--model", o.model, "mlp:IN,H1,...,OUT or cnn:small")
      ->capture_default_str();
  tools::add_enum_option(app, "--loss", o.loss, loss_names(),
                         "xent (integer labels) or mse (float targets)");
  auto* epochs = app.add_option("--epochs", o.epochs, "Epochs")
                     ->check(tools::non_negative_integer())
                     ->check(CLI::PositiveNumber)
                     ->capture_default_str();
  app.add_option("--steps", o.steps, "Total optimizer steps (instead of --epochs)")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->excludes(epochs);
  tools::add_enum_option(app, "--optimizer", o.optimizer, optimizer_names(),
                         "sgd or adamw");
  // The optimizers take any lr, momentum or decay >= 0; inf or nan would only
  // show up steps later as NaN weights.
  app.add_option("--lr", o.lr, "Learning rate (>= 0)")
      ->check(tools::finite_number<float>())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")
      ->check(tools::finite_number<float>())
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "Weight decay (>= 0)")
      ->check(tools::finite_number<float>())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Base seed (drawn from the OS and printed if unset)")
      ->check(tools::non_negative_integer());
  app.add_flag("--no-shuffle", o.no_shuffle, "The sampler's unshuffled order");
  tools::add_order_option(app, o.order, &o.shuffle_block);
  tools::add_partition_option(app, o.partition);
  tools::add_canonical_nodes_option(app, o.canonical_nodes);
  app.add_option("--global-batch-size", o.global_batch_size,
                 "elastic: samples per step over all ranks (G); each rank takes G/np, "
                 "so np must divide G (default: --batch-size x np)")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->excludes(lf.batch_size);
  tools::add_enum_option(app, "--backend", o.backend, backend_names(),
                         "auto (nccl when a GPU is visible), mpi or nccl");
  // Bounded, so that the conversion to a byte count is defined (1 TiB at most).
  app.add_option("--bucket-mb", o.bucket_mb,
                 "Gradient bucket size in MB (at most 1048576)")
      ->check(tools::finite_number<double>())
      ->check(CLI::PositiveNumber)
      ->check(CLI::Range(0.0, 1048576.0).description(""))
      ->capture_default_str();
  tools::add_enum_option(
      app, "--mode", o.mode, mode_names(),
      "ddp (one process per rank), dp (one process, replicas on --devices), "
      "ddp-mp (model split over two devices per rank, see --split)");
  app.add_option("--devices", o.devices, "dp: replica devices, e.g. 0,1")->delimiter(',');
  app.add_option("--split", o.split, "ddp-mp: layers on the first device")
      ->check(CLI::PositiveNumber);
  app.add_option("--init", o.init, "Initial weights (safetensors, nn.Sequential names)");
  app.add_option("--save", o.save,
                 "Write a checkpoint here at the end (the weights; the optimizer "
                 "state goes beside it, in FILE.optim)");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "Also write --save every N steps")
      ->check(tools::non_negative_integer());
  app.add_option("--resume", o.resume,
                 "Continue exactly from this checkpoint and its FILE.optim");
  app.add_option("--log-json", o.log_json, "Append one JSON line per epoch here");
  app.add_option("--trace", o.trace,
                 "Append one JSON line per trained sample here (rank, epoch, step, "
                 "batch, index, rng, content: a seed-audit trace), rank 0 writing for "
                 "all ranks");
  app.add_flag("--progress", o.progress,
               "Progress bar even when stderr is not a terminal");
  app.add_option("--skip-steps", o.skip_steps,
                 "Do not train global steps A to B-1 (A:B; repeatable): every other step "
                 "trains what it would have; kept in --save checkpoints")
      ->type_name("A:B")
      ->take_all();
  app.add_option("--skip-samples", o.skip_samples,
                 "Leave out the sample indices listed in FILE (one a line; needs "
                 "--seeding sample); kept in --save checkpoints")
      ->type_name("FILE");
}

std::vector<std::uint64_t> skip_sample_indices(const TrainOptions& o) {
  if (o.skip_samples.empty()) return {};
  return tools::read_sample_list("--skip-samples", o.skip_samples);
}

void validate(const TrainOptions& o) {
  const Mode m = o.mode;
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
  if (o.global_batch_size && o.partition != Partition::kElastic)
    throw ConfigError("--global-batch-size applies to --partition elastic only");
  if (o.canonical_nodes.value_or(0) && o.partition != Partition::kElastic)
    throw ConfigError("--canonical-nodes applies to --partition elastic only");
  if (o.partition == Partition::kElastic && o.seeding != SeedScope::kSample)
    throw ConfigError(
        "--partition elastic needs --seeding sample (per-sample streams make a global "
        "batch the same bytes at any world size)");
  if (!o.skip_samples.empty() && o.seeding != SeedScope::kSample)
    throw ConfigError(
        "--skip-samples needs --seeding sample (under worker streams the samples after a "
        "skipped one would be augmented differently)");
  tools::parse_skip_steps(o.skip_steps);  // well-formed
}

std::uint64_t global_batch_size(const TrainOptions& o, std::uint64_t world_size) {
  if (o.partition == Partition::kElastic && o.global_batch_size)
    return *o.global_batch_size;
  return o.batch_size * world_size;
}

std::uint64_t rank_batch_size(const TrainOptions& o, std::uint64_t world_size) {
  if (o.partition != Partition::kElastic || !o.global_batch_size) return o.batch_size;
  const std::uint64_t g = *o.global_batch_size;
  if (g % world_size != 0)
    throw ConfigError("--global-batch-size " + std::to_string(g) +
                      " is not divisible by the world size (mpirun -np " +
                      std::to_string(world_size) +
                      "): every rank takes G/np samples a step");
  return g / world_size;
}

std::string resume_config_json(const TrainOptions& o, std::uint64_t world_size,
                               std::uint64_t canonical_nodes) {
  nlohmann::json j;
  j["data"] = redact_credentials(o.data);
  j["transform"] = o.transform;
  j["model"] = o.model;
  j["loss"] = tools::enum_name(loss_names(), o.loss);
  // Strided files hold no partition key (as before it existed): absent means strided.
  if (o.partition == Partition::kElastic) {
    j["partition"] = tools::enum_name(tools::partition_names(), o.partition);
    j["global_batch_size"] = global_batch_size(o, world_size);
    // 0 too: a resume that names another C than its checkpoint's is refused,
    // none included (check_resume_config reads an absent key as 0).
    j["canonical_nodes"] = canonical_nodes;
  } else {
    j["batch_size"] = o.batch_size;
  }
  j["optimizer"] = tools::enum_name(optimizer_names(), o.optimizer);
  j["lr"] = o.lr;
  j["momentum"] = o.momentum;
  j["weight_decay"] = o.weight_decay;
  j["seeding"] = tools::enum_name(seeding_names(), o.seeding);
  j["shuffle"] = !o.no_shuffle;
  j["order"] = tools::enum_name(tools::order_names(), o.order);
  // Only under order shards, so that other checkpoints keep their config.
  if (o.order == ShuffleOrder::kShards) j["shuffle_block"] = o.shuffle_block;
  j["mode"] = tools::enum_name(mode_names(), o.mode);
  j["split"] = o.split;
  j["devices"] = o.devices.size();
  return j.dump();
}

}  // namespace seedloader::train
