#include "tools/ddp_train/trainer.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/json_depth.h"
#include "seedloader/data_loader.h"
#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/ledger.h"
#include "seedloader/mixture_state_json.h"
#include "tools/common/progress_bar.h"
#include "tools/ddp_train/batch_feed.h"
#include "tools/ddp_train/checkpoint.h"
#include "tools/ddp_train/launch_env.h"
#include "tools/ddp_train/rank_agreement.h"
#include "tools/ddp_train/step_trace.h"
#include "tools/ddp_train/train_data.h"
#include "tools/ddp_train/train_model.h"

#if defined(SEEDLOADER_HAS_CUDA)
#include "seedloader/ddp/nccl_communicator.h"
#endif

namespace seedloader::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool want_nccl(const TrainOptions& o) {
  if (o.backend == Backend::kMpi || o.mode == Mode::kDataParallel) return false;
  if (o.backend == Backend::kNccl) {
#ifndef SEEDLOADER_HAS_CUDA
    throw ConfigError(
        "--backend nccl: this build has no CUDA (SEEDLOADER_WITH_CUDA=OFF)");
#endif
    if (!ddp::cuda_device_available())
      throw ConfigError("--backend nccl: no CUDA device is visible");
    return true;
  }
  return ddp::cuda_device_available();
}

// The seed every rank uses: --seed, the checkpoint's, or drawn once on rank 0.
std::uint64_t agree_seed(const TrainOptions& o, ddp::MpiCommunicator& mpi) {
  std::int64_t v = 0;
  if (o.seed) {
    v = static_cast<std::int64_t>(*o.seed);
  } else if (o.resume.empty() && mpi.rank() == 0) {
    v = static_cast<std::int64_t>(draw_base_seed("ddp-train"));
  }
  mpi.broadcast(std::span<std::int64_t>(&v, 1), 0);
  return static_cast<std::uint64_t>(v);
}

// Throws ConfigError naming `option` when rank 0 could not write `path` there:
// the path is a directory, its directory is missing, or either is not writable.
void check_output(const char* option, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  auto refuse = [&](const std::string& why) {
    throw ConfigError(std::string(option) + " " + path + ": " + why);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) refuse("is a directory");
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) refuse("directory " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    refuse("cannot write in " + dir.string() + ": " + std::strerror(errno));
  if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0)
    refuse(std::string("not writable: ") + std::strerror(errno));
}

// The partition a checkpoint's config names (files without one are strided).
std::string saved_partition(const nlohmann::json& config) {
  return config.value("partition",
                      tools::enum_name(tools::partition_names(), Partition::kStrided));
}

// Names the first option in which a checkpoint's config differs from this run's.
// Over a mixture the data spec, size and fingerprint are not compared: its sources
// and weights may change at a resume (resumed_mixture() checks what must not).
// A strided run resumes at its own world size only; an elastic one at any world size
// dividing the same global batch size, since its position is a global batch.
void check_resume_config(const std::string& path, const CheckpointState& s,
                         const TrainOptions& o, int world, std::uint64_t data_size,
                         std::uint64_t fingerprint, std::uint64_t canonical_nodes,
                         bool mixture) {
  const std::uint64_t w = static_cast<std::uint64_t>(world);
  nlohmann::json saved,
      now = nlohmann::json::parse(resume_config_json(o, w, canonical_nodes));
  try {
    saved = parse_json<nlohmann::json>(s.config);
  } catch (const std::exception& e) {
    throw DataError("checkpoint " + path +
                    ": metadata 'config' is not JSON: " + e.what());
  }
  if (!saved.is_object())
    throw DataError("checkpoint " + path + ": metadata 'config' is not a JSON object");
  // A checkpoint written before the data spec was saved redacted holds it whole.
  if (saved.contains("data") && saved["data"].is_string())
    saved["data"] = redact_credentials(saved["data"].get<std::string>());
  // Elastic checkpoints from before canonical nodes hold no key: no split.
  if (o.partition == Partition::kElastic && !saved.contains("canonical_nodes"))
    saved["canonical_nodes"] = 0;
  const std::string partition = saved_partition(saved), ours = saved_partition(now);
  if (partition != ours)
    throw DataError("checkpoint " + path + ": saved with --partition " + partition +
                    ", this run has --partition " + ours);
  if (o.partition == Partition::kElastic) {
    const nlohmann::json& g = saved["global_batch_size"];
    if (g != now["global_batch_size"])
      throw DataError("checkpoint " + path + ": saved with global batch size " +
                      g.dump() + ", this run has " + now["global_batch_size"].dump() +
                      " (pass --global-batch-size " + g.dump() +
                      " to continue its data stream)");
    if (s.world_size == 0 || !g.is_number_unsigned() ||
        g.get<std::uint64_t>() % s.world_size != 0)
      throw DataError("checkpoint " + path + ": world_size " +
                      std::to_string(s.world_size) +
                      " does not divide its global batch size " + g.dump());
  } else if (s.world_size != w) {
    throw DataError("checkpoint " + path + ": saved with world size " +
                    std::to_string(s.world_size) + ", this run has " +
                    std::to_string(world) +
                    " (exact resume needs the same world size; --partition elastic "
                    "resumes at another)");
  }
  for (auto& [key, value] : now.items()) {
    if (mixture && key == "data") continue;
    if (!saved.contains(key) || saved[key] != value)
      throw DataError("checkpoint " + path + ": saved with " + key + " = " +
                      (saved.contains(key) ? saved[key].dump() : "(none)") +
                      ", this run has " + value.dump());
  }
  if (mixture) {
    if (s.mixture.empty())
      throw DataError(
          "checkpoint " + path +
          ": saved from a data set that is not a mixture; this run reads one");
  } else if (!s.mixture.empty()) {
    throw DataError("checkpoint " + path +
                    ": saved from a mixture; this run's data set is not one");
  } else if (s.dataset_size != data_size) {
    throw DataError("checkpoint " + path + ": saved with a data set of " +
                    std::to_string(s.dataset_size) + " samples, this run's has " +
                    std::to_string(data_size));
  } else if (s.dataset_fingerprint != fingerprint) {
    throw DataError("checkpoint " + path +
                    ": the data set differs from the one it was saved with (its "
                    "description, file names or file sizes changed)");
  }
  if (o.seed && *o.seed != s.base_seed)
    throw DataError("checkpoint " + path + ": saved with seed " +
                    std::to_string(s.base_seed) + ", --seed says " +
                    std::to_string(*o.seed));
}

// "name dtype[shape], ..." for every field, as ranks compare layouts.
std::string layout_string(const SampleLayout& layout) {
  std::string out;
  for (const FieldSpec& f : layout.fields())
    out += (out.empty() ? "" : ", ") + f.name + " " + dtype_name(f.dtype) +
           ddp::shape_string(ddp::Shape(f.shape.begin(), f.shape.end())) +
           (f.variable ? " (variable)" : "");
  return out;
}

// XXH64 over every stage's parameters, in stage order.
std::uint64_t weights_hash(TrainModel& model) {
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> h(XXH64_createState(),
                                                                      &XXH64_freeState);
  XXH64_reset(h.get(), 0);
  for (const Stage& stage : model.stages()) {
    const std::vector<float> p = stage.model->parameters_to_host();
    XXH64_update(h.get(), p.data(), p.size() * sizeof(float));
  }
  return XXH64_digest(h.get());
}

struct EpochStats {
  StepStats sum;
  std::uint64_t steps = 0;
  double wait = 0;
};

// One rank's training run, in the order go() takes its steps. Owns the
// communicators, data, loader, feed and model; not thread-safe.
class Run {
 public:
  explicit Run(const TrainOptions& o) : o_(o) {}
  void go();

 private:
  // Throws ConfigError for an option the world size rules out, or for launcher
  // variables (torchrun, srun) that disagree with the MPI world (launch_env.h).
  // Sets batch_.
  void check_world();
  // Rank 0 checks it can write --save and --log-json; every rank throws if not,
  // so nothing trains towards a save that must fail. Collective.
  void check_outputs();
  // MPI always; NCCL on top for gradients when --backend asks for it (or auto finds
  // a GPU). Sets comm_ and gpu_. Collective.
  void open_communicators();
  // Opens --data and checks its fields against --loss and --model. Local.
  void open_data();
  // Builds the model (its Reducer checks the parameter shapes across ranks and
  // broadcasts rank 0's weights). Collective. REQUIRES: open_data() ran.
  void build_model();
  // Loads --init's weights and fingerprints the data set for --save / --resume.
  // Local.
  void load_inputs();
  // Loads --resume into the model and takes its seed and step count; returns where
  // training continues ({0, 0} without --resume). Local.
  Position resume();
  // Checks --resume's schedule against this run's epochs and steps.
  // REQUIRES: open_loader() ran.
  void check_resumed_position() const;
  // The rank's DataLoader and the feed that puts its batches on the model's device.
  // REQUIRES: seed_ is final.
  void open_loader();
  // The skips the loader declares (LoaderOptions::skip): the resumed checkpoint's
  // and --skip-steps / --skip-samples, global steps cut into epochs of `lo`'s.
  SkipList declared_skips(const LoaderOptions& lo) const;
  // What every rank must share, for check_ranks_agree, in the order a difference
  // is reported: the data, then the options, then the resume state.
  std::vector<RankFact> facts(Position start) const;
  // Rank 0 prints what it trains and how.
  void print_banner() const;
  // Trains from `start` until the step budget ends; returns the first position not
  // trained. Logs every epoch and writes --checkpoint-every checkpoints.
  Position train(Position start);
  // Trains epoch `start.epoch` from batch `start.batch` to its end or the step
  // budget's; returns the epoch's batches done (those before `start.batch` included).
  std::uint64_t train_epoch(Position start, EpochStats& es, tools::ProgressBar& bar);
  // With --trace, on rank 0: the ledger's entries of `epoch`'s steps from `from` on
  // that the run declares skipped, by step (empty without skips or on other ranks).
  std::vector<LedgerEntry> declared_entries(std::uint64_t epoch,
                                            std::uint64_t from) const;
  // A ledger query of this run's data (its mixture's order for a mixture) under `lo`.
  LedgerQuery ledger_query(const LoaderOptions& lo) const;
  // The per-rank batch size of the run that saved --resume's checkpoint, which its
  // epoch_samples counts in. REQUIRES: resumed_.
  std::uint64_t saved_batch_size() const;
  // Writes --save so that a resume continues at `next`. Collective.
  void save(Position next);
  void log_epoch(std::uint64_t epoch, const EpochStats& es, double wall);

  const TrainOptions& o_;
  ddp::MpiCommunicator mpi_;
  std::unique_ptr<ddp::Communicator> nccl_;
  ddp::Communicator* comm_ = &mpi_;  // the one gradients are all-reduced on
  bool gpu_ = false;
  std::unique_ptr<Dataset> data_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<BatchFeed> feed_;
  std::unique_ptr<TrainModel> model_;
  ddp::Shape sample_;         // one sample's input shape
  std::int64_t classes_ = 0;  // the model's outputs per row: labels lie below it
  std::uint64_t seed_ = 0, global_step_ = 0, num_batches_ = 0, total_steps_ = 0;
  std::uint64_t batch_ = 0;  // per rank (rank_batch_size)
  std::uint64_t run_ = 0;    // resumes since the fresh run
  // A resumed mixture's saved step, checked against the position.
  std::optional<std::uint64_t> resumed_mixture_step_;
  std::unique_ptr<MixtureSampler> mixture_order_;  // over data_, for save()
  std::unique_ptr<StepTrace> trace_;
  std::uint64_t data_fingerprint_ = 0;  // only with --save or --resume
  std::optional<CheckpointState> resumed_;
  SkipList skip_;                 // a resumed checkpoint's declared skips and this run's
  LoaderOptions loader_options_;  // the rank's, as open_loader() built them
  // --canonical-nodes, or its default for this world (check_world()), or the
  // resumed checkpoint's (resume()).
  std::uint64_t canonical_nodes_ = 0;
};

void Run::go() {
  // Local steps run inside fail_together, so an error on one rank stops every rank
  // instead of leaving the others waiting in their next collective.
  fail_together(mpi_, [&] {
    validate(o_);
    check_world();
  });
  check_outputs();
  open_communicators();
  seed_ = agree_seed(o_, mpi_);
  fail_together(mpi_, [&] { open_data(); });
  build_model();
  Position start;
  fail_together(mpi_, [&] {
    load_inputs();
    start = resume();
    model_->sync_copies();
    open_loader();
  });
  // Before the first gradient collective: ranks that see other data or options
  // would pair up the wrong collectives.
  check_ranks_agree(mpi_, facts(start));
  check_resumed_position();
  print_banner();
  const Position end = train(start);
  if (!o_.save.empty()) {
    save(end);
    if (mpi_.rank() == 0) std::printf("ddp-train: saved %s\n", o_.save.c_str());
  }
}

void Run::check_world() {
  check_launch_env(mpi_.rank(), mpi_.size(),
                   [](const char* name) -> const char* { return std::getenv(name); });
  batch_ = rank_batch_size(o_, static_cast<std::uint64_t>(mpi_.size()));
  LoaderOptions run;
  run.partition = o_.partition;
  run.shuffle = !o_.no_shuffle;
  run.order = o_.order;
  run.nodes = tools::node_count(static_cast<std::uint64_t>(mpi_.size()));
  canonical_nodes_ = o_.canonical_nodes.value_or(default_canonical_nodes(run));
  if (o_.mode == Mode::kDataParallel && mpi_.size() > 1)
    throw ConfigError(
        "--mode dp runs as one process (replicas are threads); run it without "
        "mpirun -np " +
        std::to_string(mpi_.size()));
}

void Run::check_outputs() {
  std::string error;
  if (mpi_.rank() == 0) {
    try {
      check_output("--save", o_.save);
      check_output("--log-json", o_.log_json);
    } catch (const ConfigError& e) {
      error = e.what();
    }
  }
  std::int64_t bad = error.empty() ? 0 : 1;
  mpi_.broadcast(std::span<std::int64_t>(&bad, 1), 0);
  if (!error.empty()) throw ConfigError(error);
  if (bad) throw ConfigError("rank 0 cannot write --save or --log-json");
}

void Run::open_communicators() {
  gpu_ = want_nccl(o_);
#if defined(SEEDLOADER_HAS_CUDA)
  if (gpu_) {
    nccl_ = std::make_unique<ddp::NcclCommunicator>(mpi_);
    comm_ = nccl_.get();
  }
#endif
}

void Run::open_data() {
  data_ = open_train_data(o_.data, o_.transform);
  sample_ = check_fields(*data_, o_.loss);
  classes_ = model_classes(o_.model, sample_);
}

void Run::build_model() {
  model_ = make_train_model(o_, sample_, gpu_ ? ddp::Device::kCuda : ddp::Device::kCpu,
                            comm_, seed_);
}

void Run::load_inputs() {
  if (!o_.init.empty()) {
    const std::string prefix = load_weights(o_.init, model_->stages());
    if (!prefix.empty() && mpi_.rank() == 0)
      std::printf(
          "ddp-train: --init %s: parameters carry the '%s' prefix of a wrapped "
          "(DDP or DataParallel) model; read without it\n",
          o_.init.c_str(), prefix.c_str());
  }
  if (!o_.save.empty() || !o_.resume.empty())
    data_fingerprint_ = data_fingerprint(o_.data, *data_);
}

Position Run::resume() {
  if (o_.resume.empty()) return {};
  CheckpointState s = load_checkpoint(o_.resume, model_->stages());
  if (!o_.canonical_nodes) {
    // Unset: the run goes on with the split it started with (none when its
    // checkpoint names none).
    canonical_nodes_ = 0;
    try {
      const nlohmann::json saved = parse_json<nlohmann::json>(s.config);
      if (saved.is_object() && saved.contains("canonical_nodes") &&
          saved["canonical_nodes"].is_number_unsigned())
        canonical_nodes_ = saved["canonical_nodes"].get<std::uint64_t>();
    } catch (const std::exception&) {
      // check_resume_config() names what is wrong with it.
    }
  }
  const auto* mixture = dynamic_cast<const MixtureDataset*>(data_.get());
  check_resume_config(o_.resume, s, o_, mpi_.size(), data_->size(), data_fingerprint_,
                      canonical_nodes_, mixture != nullptr);
  if (mixture != nullptr) {
    // The saved steps keep their weights; this run's apply from the saved step.
    const MixtureState saved = parse_mixture_state(
        "checkpoint " + o_.resume + ": metadata 'mixture'", s.mixture);
    try {
      data_ = std::make_unique<MixtureDataset>(resumed_mixture(
          *mixture, saved, global_batch_size(o_, static_cast<std::uint64_t>(mpi_.size())),
          s.base_seed));
    } catch (const ConfigError& e) {
      throw DataError("checkpoint " + o_.resume + ": " + e.what());
    }
    resumed_mixture_step_ = saved.step;
    // Skipped samples were saved as indices of the saved mixture; a source added
    // now may move them.
    for (std::uint64_t& i : s.skip.samples) {
      try {
        i = moved_index(saved, static_cast<const MixtureDataset&>(*data_), i);
      } catch (const ConfigError& e) {
        throw DataError("checkpoint " + o_.resume + ": its skipped " + e.what());
      }
    }
  }
  resumed_ = s;
  seed_ = s.base_seed;
  global_step_ = s.global_step;
  run_ = s.run + 1;
  if (mpi_.rank() == 0 && s.workers != static_cast<std::uint64_t>(o_.workers) &&
      o_.seeding == SeedScope::kWorker)
    std::fprintf(stderr,
                 "ddp-train: warning: resuming with %d workers, saved with %llu; under "
                 "--seeding full the augmentations differ from an uninterrupted run "
                 "(--seeding sample does not depend on the worker count)\n",
                 o_.workers, static_cast<unsigned long long>(s.workers));
  return s.position(saved_batch_size());
}

std::uint64_t Run::saved_batch_size() const {
  // check_resume_config made the global batch size equal and checked the division.
  if (o_.partition == Partition::kElastic)
    return global_batch_size(o_, static_cast<std::uint64_t>(mpi_.size())) /
           resumed_->world_size;
  return batch_;
}

void Run::check_resumed_position() const {
  if (!resumed_) return;
  check_position(o_.resume, *resumed_, saved_batch_size(), num_batches_, total_steps_);
  const Position p = resumed_->position(saved_batch_size());
  if (resumed_mixture_step_ && *resumed_mixture_step_ != p.epoch * num_batches_ + p.batch)
    throw DataError("checkpoint " + o_.resume + ": its mixture is at step " +
                    std::to_string(*resumed_mixture_step_) + ", its position at step " +
                    std::to_string(p.epoch * num_batches_ + p.batch) + " of epochs of " +
                    std::to_string(num_batches_));
}

SkipList Run::declared_skips(const LoaderOptions& lo) const {
  SkipList skip = resumed_ ? resumed_->skip : SkipList{};
  LedgerQuery q = ledger_query(lo);
  const std::uint64_t per_epoch =
      ledger_steps(q);  // the same at any world size (elastic)
  for (const StepRange& r :
       tools::epoch_step_ranges(tools::parse_skip_steps(o_.skip_steps), per_epoch))
    if (std::find(skip.steps.begin(), skip.steps.end(), r) == skip.steps.end())
      skip.steps.push_back(r);
  for (const std::uint64_t i : skip_sample_indices(o_))
    if (std::find(skip.samples.begin(), skip.samples.end(), i) == skip.samples.end())
      skip.samples.push_back(i);
  if (!skip.samples.empty() && lo.seeding != SeedScope::kSample)
    throw ConfigError("the checkpoint " + o_.resume +
                      " skips samples, which needs --seeding sample");
  return skip;
}

void Run::open_loader() {
  LoaderOptions lo;
  lo.batch_size = batch_;
  lo.num_workers = o_.workers;
  lo.shuffle = !o_.no_shuffle;
  lo.order = o_.order;
  lo.shuffle_block = o_.shuffle_block;
  lo.seed = seed_;
  lo.persistent_workers = true;
  lo.rank = static_cast<std::uint64_t>(mpi_.rank());
  lo.world_size = static_cast<std::uint64_t>(mpi_.size());
  lo.partition = o_.partition;
  lo.canonical_nodes = canonical_nodes_;
  lo.nodes = tools::node_count(lo.world_size);
  lo.seeding = o_.seeding;
  lo.timeout = std::chrono::seconds(o_.timeout_s);
  lo.skip = declared_skips(lo);
  skip_ = lo.skip;
  loader_options_ = lo;
  loader_ = std::make_unique<DataLoader>(*data_, lo);
  num_batches_ = loader_->num_batches();
  total_steps_ = o_.steps ? *o_.steps : o_.epochs * num_batches_;
#if defined(SEEDLOADER_HAS_CUDA)
  if (gpu_) {
    auto* n = static_cast<ddp::NcclCommunicator*>(nccl_.get());
    feed_ =
        make_device_feed(*loader_, o_.loss, classes_, data_->describe(), n->cuda_device(),
                         model_->stages()[0].model->context().gpu->stream());
  }
#endif
  if (!feed_) feed_ = make_host_feed(*loader_, o_.loss, classes_, data_->describe());
  if (!o_.trace.empty())
    trace_ = std::make_unique<StepTrace>(
        o_.trace, mpi_, batch_, run_, dynamic_cast<const MixtureDataset*>(data_.get()));
}

std::vector<RankFact> Run::facts(Position start) const {
  std::vector<RankFact> out{
      {"data set size", std::to_string(data_->size()) + " samples"},
      {"batches per epoch", std::to_string(num_batches_)},
      {"sample layout", layout_string(data_->layout())},
      {"data set", data_->describe()},
  };
  const nlohmann::json options = nlohmann::json::parse(
      resume_config_json(o_, static_cast<std::uint64_t>(mpi_.size()), canonical_nodes_));
  for (const auto& [key, value] : options.items())
    out.push_back({"option " + key, value.dump()});
  std::string resumed = "none (no --resume)";
  if (resumed_)
    resumed = "epoch " + std::to_string(start.epoch) + ", batch " +
              std::to_string(start.batch) + ", global step " +
              std::to_string(global_step_);
  std::string saves = "none (no --save)";
  if (!o_.save.empty())
    saves = o_.checkpoint_every == 0
                ? "--save at the end"
                : "--save every " + std::to_string(o_.checkpoint_every) +
                      " steps and at the end";
  out.push_back({"total steps", std::to_string(total_steps_)});
  out.push_back({"gradient backend", gpu_ ? "nccl" : "mpi"});
  // Buckets of other sizes would pair all-reduces of other lengths.
  out.push_back({"option bucket_mb", nlohmann::json(o_.bucket_mb).dump()});
  out.push_back({"seed", std::to_string(seed_)});
  out.push_back({"resume position", resumed});
  // Rank 0's weights were broadcast before --init and --resume loaded files on
  // every rank: files that differ would leave the replicas apart for good.
  out.push_back({"model weights (XXH64)", std::to_string(weights_hash(*model_))});
  out.push_back({"checkpoints", saves});
  // Computed only with --save or --resume, which the facts above already compared.
  out.push_back({"data set fingerprint", std::to_string(data_fingerprint_)});
  return out;
}

void Run::print_banner() const {
  if (mpi_.rank() != 0) return;
  std::printf("ddp-train: %s, %d rank(s), backend %s, mode %s, model %s, seed %llu%s\n",
              data_->describe().c_str(), mpi_.size(), gpu_ ? "nccl" : "mpi",
              tools::enum_name(mode_names(), o_.mode).c_str(), o_.model.c_str(),
              static_cast<unsigned long long>(seed_),
              o_.seed || !o_.resume.empty() ? "" : " (drawn)");
  if (canonical_nodes_ != 0)
    std::printf("ddp-train: %llu canonical nodes%s (seed-audit --canonical-nodes %llu)\n",
                static_cast<unsigned long long>(canonical_nodes_),
                o_.canonical_nodes  ? ""
                : o_.resume.empty() ? ", one per node (the default)"
                                    : ", the checkpoint's",
                static_cast<unsigned long long>(canonical_nodes_));
  if (o_.mode == Mode::kModelParallel)
    std::printf("ddp-train: stage 0 = layers 0..%d, stage 1 = the rest; %s\n",
                o_.split - 1,
                gpu_ ? "both on the rank's GPU (one GPU per stage is not supported)"
                     : "both on the CPU");
  std::fflush(stdout);
}

Position Run::train(Position start) {
  tools::ProgressBar bar(mpi_.rank() == 0 && (o_.progress || isatty(STDERR_FILENO)),
                         total_steps_ - std::min(total_steps_, global_step_));
  Position pos = start;
  while (global_step_ < total_steps_) {
    EpochStats es;
    const auto t0 = Clock::now();
    const std::uint64_t done = train_epoch(pos, es, bar);
    log_epoch(pos.epoch, es, seconds_since(t0));
    pos = Position::after(pos.epoch, done, num_batches_);
    if (pos.batch != 0) break;  // stopped by --steps mid-epoch
  }
  bar.finish();
  return pos;
}

std::uint64_t Run::train_epoch(Position start, EpochStats& es, tools::ProgressBar& bar) {
  const std::uint64_t world = static_cast<std::uint64_t>(mpi_.size());
  // A resumed epoch starts at its first untrained batch (the feed replays the
  // earlier ones where the worker streams must advance as they did).
  feed_->start(start.epoch, start.batch);
  std::uint64_t b = start.batch;
  // --trace: declared skips are written as the steps they fall in are passed.
  const std::vector<LedgerEntry> declared = declared_entries(start.epoch, b);
  std::size_t next_declared = 0;
  const auto record_declared = [&](std::uint64_t end) {  // those of steps before `end`
    std::size_t n = next_declared;
    while (n < declared.size() && declared[n].step < end) ++n;
    trace_->record_skipped(
        std::span<const LedgerEntry>(declared).subspan(next_declared, n - next_declared),
        start.epoch * num_batches_ + 1);
    next_declared = n;
  };
  for (;;) {
    const auto tw = Clock::now();
    const StepInputs* in = feed_->next();
    es.wait += seconds_since(tw);
    if (!in) break;
    // Steps are numbered as positions: a declared skip passes over its numbers.
    b = in->batch->number();
    global_step_ = start.epoch * num_batches_ + b;
    if (global_step_ >= total_steps_) {  // --steps ends inside skipped steps
      global_step_ = total_steps_;
      b = total_steps_ - start.epoch * num_batches_;
      break;
    }
    if (trace_) {
      record_declared(b + 1);  // skipped steps before b, and b's skipped samples
      trace_->record(start.epoch, b, global_step_ + 1, *in->batch);
    }
    ++b;
    StepStats s = model_->step(in->x, in->x_shape, in->target);
    es.sum.loss_sum += s.loss_sum;
    es.sum.correct += s.correct;
    es.sum.rows += s.rows;
    ++es.steps;
    ++global_step_;
    bar.add(1, s.rows * world);
    if (o_.checkpoint_every > 0 && global_step_ % o_.checkpoint_every == 0)
      save(Position::after(start.epoch, b, num_batches_));
    if (global_step_ >= total_steps_) break;
  }
  // Skipped steps at the epoch's end are passed too.
  while (b < num_batches_ && global_step_ < total_steps_ && skip_.step(start.epoch, b)) {
    ++b;
    ++global_step_;
  }
  if (trace_) record_declared(b);
  if (b < num_batches_ && global_step_ < total_steps_)
    throw Error("epoch " + std::to_string(start.epoch) + ": the loader ended after " +
                std::to_string(b) + " of " + std::to_string(num_batches_) + " batches");
  return b;
}

LedgerQuery Run::ledger_query(const LoaderOptions& lo) const {
  LedgerQuery q;
  q.options = lo;
  q.dataset_size = data_->size();
  q.seed = seed_;
  q.shard_sizes = data_->shard_sizes();
  if (const auto* mixture = dynamic_cast<const MixtureDataset*>(data_.get()))
    q.mixture = ledger_mixture(*mixture);
  return q;
}

std::vector<LedgerEntry> Run::declared_entries(std::uint64_t epoch,
                                               std::uint64_t from) const {
  std::vector<LedgerEntry> out;
  if (!trace_ || mpi_.rank() != 0 || skip_.empty()) return out;
  LedgerQuery q = ledger_query(loader_options_);
  q.epoch = epoch;
  // One query over the rest of the epoch, keeping only the skipped entries: the
  // epoch's order once per rank, memory for the skipped alone.
  q.first_step = from;
  q.end_step = num_batches_;
  q.skipped_only = true;
  if (from < num_batches_) out = ledger(q);
  return out;
}

void Run::save(Position next) {
  CheckpointState s;
  s.base_seed = seed_;
  s.set_position(next, batch_);
  s.global_step = global_step_;
  s.skip = skip_;
  s.run = run_;
  s.world_size = static_cast<std::uint64_t>(mpi_.size());
  s.workers = static_cast<std::uint64_t>(o_.workers);
  s.dataset_size = data_->size();
  s.dataset_fingerprint = data_fingerprint_;
  s.config =
      resume_config_json(o_, static_cast<std::uint64_t>(mpi_.size()), canonical_nodes_);
  s.optimizer = optimizer_json(o_);
  if (const auto* mixture = dynamic_cast<const MixtureDataset*>(data_.get())) {
    // One sampler for the run: each save goes on from the step the last one reached.
    if (!mixture_order_)
      mixture_order_ = std::make_unique<MixtureSampler>(
          *mixture, global_batch_size(o_, static_cast<std::uint64_t>(mpi_.size())), 1, 0,
          seed_);
    const std::uint64_t first = next.epoch * num_batches_;
    s.mixture =
        mixture_state_json(mixture_state(*mixture_order_, first, first + next.batch));
  }
  if (mpi_.rank() == 0) save_checkpoint(o_.save, model_->stages(), s);
  mpi_.barrier();
}

void Run::log_epoch(std::uint64_t epoch, const EpochStats& es, double wall) {
  // Counts travel as integers: a float sum of rows or correct answers rounds once
  // an epoch passes 2^24 samples. Only the loss sum and the stall fraction are real.
  std::vector<std::int64_t> counts{static_cast<std::int64_t>(es.sum.correct),
                                   static_cast<std::int64_t>(es.sum.rows)};
  mpi_.allreduce(std::span<std::int64_t>(counts), ddp::IntReduceOp::kSum);
  std::vector<float> v{static_cast<float>(es.sum.loss_sum),
                       static_cast<float>(es.wait / wall)};
  mpi_.allreduce(v);
  const double correct = static_cast<double>(counts[0]);
  const double rows = static_cast<double>(counts[1]);
  if (mpi_.rank() != 0 || rows == 0) return;
  const double loss = v[0] / rows, samples_s = rows / wall;
  const double stall = v[1] / static_cast<float>(mpi_.size());
  const bool xent = o_.loss == Loss::kXent;
  std::string acc = xent ? "  accuracy " + std::to_string(correct / rows) : "";
  std::printf(
      "epoch %llu: loss %.6f%s  %.0f samples/s  data stall %.1f%%  (%llu steps)\n",
      static_cast<unsigned long long>(epoch), loss, acc.c_str(), samples_s, 100.0 * stall,
      static_cast<unsigned long long>(es.steps));
  std::fflush(stdout);
  if (o_.log_json.empty()) return;
  nlohmann::json j{
      {"epoch", epoch},      {"loss", loss},      {"samples_per_s", samples_s},
      {"data_stall", stall}, {"steps", es.steps}, {"global_step", global_step_}};
  if (xent) j["accuracy"] = correct / rows;
  std::ofstream log(o_.log_json, std::ios::app);
  log << j.dump() << "\n";
  log.flush();
  if (!log)
    throw Error("--log-json " + o_.log_json + ": cannot append: " + std::strerror(errno));
}

}  // namespace

void run_training(const TrainOptions& o) { Run(o).go(); }

}  // namespace seedloader::train
