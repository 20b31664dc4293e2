#include "tools/ddp_train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ddp/mpi_communicator.h"
#include "loader/data_loader.h"
#include "rng/derive.h"
#include "rng/error.h"
#include "tools/ddp_train/batch_feed.h"
#include "tools/ddp_train/checkpoint.h"
#include "tools/ddp_train/train_data.h"
#include "tools/ddp_train/train_model.h"
#include "tools/seed_audit/progress_bar.h"

#if defined(SEEDLOADER_HAS_CUDA)
#include "ddp/nccl_communicator.h"
#endif

namespace seedloader::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool want_nccl(const TrainOptions& o) {
  if (o.backend == "mpi" || o.parsed_mode() == Mode::kDataParallel) return false;
  if (o.backend == "nccl") {
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

// Names the first option in which a checkpoint's config differs from this run's.
void check_resume_config(const std::string& path, const CheckpointState& s,
                         const TrainOptions& o, int world) {
  if (s.world_size != static_cast<std::uint64_t>(world))
    throw DataError("checkpoint " + path + ": saved with world size " +
                    std::to_string(s.world_size) + ", this run has " +
                    std::to_string(world) + " (exact resume needs the same world size)");
  nlohmann::json saved, now = nlohmann::json::parse(resume_config_json(o));
  try {
    saved = nlohmann::json::parse(s.config);
  } catch (const std::exception&) {
    throw DataError("checkpoint " + path + ": metadata 'config' is not JSON");
  }
  for (auto& [key, value] : now.items()) {
    if (!saved.contains(key) || saved[key] != value)
      throw DataError("checkpoint " + path + ": saved with " + key + " = " +
                      (saved.contains(key) ? saved[key].dump() : "(none)") +
                      ", this run has " + value.dump());
  }
  if (o.seed && *o.seed != s.base_seed)
    throw DataError("checkpoint " + path + ": saved with seed " +
                    std::to_string(s.base_seed) + ", --seed says " +
                    std::to_string(*o.seed));
}

struct EpochStats {
  StepStats sum;
  std::uint64_t steps = 0;
  double wait = 0;
};

class Run {
 public:
  explicit Run(const TrainOptions& o) : o_(o) {}
  void go();

 private:
  void save(std::uint64_t epoch, std::uint64_t batches_done);
  void log_epoch(std::uint64_t epoch, const EpochStats& es, double wall);

  const TrainOptions& o_;
  ddp::MpiCommunicator mpi_;
  std::unique_ptr<ddp::Communicator> nccl_;
  std::unique_ptr<Dataset> data_;
  std::unique_ptr<DataLoader> loader_;
  std::unique_ptr<TrainModel> model_;
  std::uint64_t seed_ = 0, global_step_ = 0, num_batches_ = 0;
};

void Run::save(std::uint64_t epoch, std::uint64_t batches_done) {
  if (batches_done == num_batches_) {
    ++epoch;
    batches_done = 0;
  }
  CheckpointState s;
  s.base_seed = seed_;
  s.epoch = epoch;
  s.epoch_samples = batches_done * o_.batch_size;
  s.global_step = global_step_;
  s.world_size = static_cast<std::uint64_t>(mpi_.size());
  s.workers = static_cast<std::uint64_t>(o_.workers);
  s.config = resume_config_json(o_);
  if (mpi_.rank() == 0) save_checkpoint(o_.save, model_->stages(), s);
  mpi_.barrier();
}

void Run::log_epoch(std::uint64_t epoch, const EpochStats& es, double wall) {
  std::vector<float> v{
      static_cast<float>(es.sum.loss_sum), static_cast<float>(es.sum.correct),
      static_cast<float>(es.sum.rows), static_cast<float>(es.wait / wall)};
  mpi_.allreduce(v);
  if (mpi_.rank() != 0 || v[2] == 0) return;
  const double loss = v[0] / v[2], samples_s = v[2] / wall;
  const double stall = v[3] / static_cast<float>(mpi_.size());
  std::string acc = o_.loss == "xent" ? "  accuracy " + std::to_string(v[1] / v[2]) : "";
  std::printf(
      "epoch %llu: loss %.6f%s  %.0f samples/s  data stall %.1f%%  (%llu steps)\n",
      static_cast<unsigned long long>(epoch), loss, acc.c_str(), samples_s, 100.0 * stall,
      static_cast<unsigned long long>(es.steps));
  std::fflush(stdout);
  if (o_.log_json.empty()) return;
  nlohmann::json j{
      {"epoch", epoch},      {"loss", loss},      {"samples_per_s", samples_s},
      {"data_stall", stall}, {"steps", es.steps}, {"global_step", global_step_}};
  if (o_.loss == "xent") j["accuracy"] = v[1] / v[2];
  std::ofstream(o_.log_json, std::ios::app) << j.dump() << "\n";
}

void Run::go() {
  validate(o_);
  const int rank = mpi_.rank(), world = mpi_.size();
  if (o_.parsed_mode() == Mode::kDataParallel && world > 1)
    throw ConfigError(
        "--mode dp runs as one process (replicas are threads); run it without "
        "mpirun -np " +
        std::to_string(world));
  const bool gpu = want_nccl(o_);
  ddp::Communicator* comm = &mpi_;
#if defined(SEEDLOADER_HAS_CUDA)
  if (gpu) {
    nccl_ = std::make_unique<ddp::NcclCommunicator>(mpi_);
    comm = nccl_.get();
  }
#endif
  seed_ = agree_seed(o_, mpi_);
  data_ = open_train_data(o_.data, o_.transform);
  const ddp::Shape sample = check_fields(*data_, o_.loss);
  model_ = make_train_model(o_, sample, gpu ? ddp::Device::kCuda : ddp::Device::kCpu,
                            comm, seed_);
  if (!o_.init.empty()) load_weights(o_.init, model_->stages());
  CheckpointState resumed;
  if (!o_.resume.empty()) {
    resumed = load_checkpoint(o_.resume, model_->stages());
    check_resume_config(o_.resume, resumed, o_, world);
    seed_ = resumed.base_seed;
    global_step_ = resumed.global_step;
    if (rank == 0 && resumed.workers != static_cast<std::uint64_t>(o_.workers) &&
        o_.seeding == "full")
      std::fprintf(stderr,
                   "ddp-train: warning: resuming with %d workers, saved with %llu; under "
                   "--seeding full the augmentations differ from an uninterrupted run "
                   "(--seeding sample does not depend on the worker count)\n",
                   o_.workers, static_cast<unsigned long long>(resumed.workers));
  }
  model_->sync_copies();

  LoaderOptions lo;
  lo.batch_size = o_.batch_size;
  lo.num_workers = o_.workers;
  lo.shuffle = !o_.no_shuffle;
  lo.seed = seed_;
  lo.persistent_workers = true;
  lo.rank = static_cast<std::uint64_t>(rank);
  lo.world_size = static_cast<std::uint64_t>(world);
  lo.seeding = o_.seed_scope();
  lo.timeout = std::chrono::seconds(120);
  loader_ = std::make_unique<DataLoader>(*data_, lo);
  num_batches_ = loader_->num_batches();
  std::unique_ptr<BatchFeed> feed;
#if defined(SEEDLOADER_HAS_CUDA)
  if (gpu) {
    auto* n = static_cast<ddp::NcclCommunicator*>(nccl_.get());
    feed = make_device_feed(*loader_, o_.loss, n->cuda_device(),
                            model_->stages()[0].model->context().gpu->stream());
  }
#endif
  if (!feed) feed = make_host_feed(*loader_, o_.loss);

  if (rank == 0) {
    std::printf("ddp-train: %s, %d rank(s), backend %s, mode %s, model %s, seed %llu%s\n",
                data_->describe().c_str(), world, gpu ? "nccl" : "mpi", o_.mode.c_str(),
                o_.model.c_str(), static_cast<unsigned long long>(seed_),
                o_.seed || !o_.resume.empty() ? "" : " (drawn)");
    if (o_.parsed_mode() == Mode::kModelParallel)
      std::printf("ddp-train: stage 0 = layers 0..%d, stage 1 = the rest; %s\n",
                  o_.split - 1,
                  gpu ? "both on the rank's GPU (one GPU per stage is not supported)"
                      : "both on the CPU");
    std::fflush(stdout);
  }
  const std::uint64_t total_steps = o_.steps ? *o_.steps : o_.epochs * num_batches_;
  audit::ProgressBar bar(rank == 0 && (o_.progress || isatty(STDERR_FILENO)),
                         total_steps - std::min(total_steps, global_step_));
  std::uint64_t epoch = resumed.epoch;
  std::uint64_t skip = o_.resume.empty() ? 0 : resumed.epoch_samples / o_.batch_size;
  std::uint64_t done_in_epoch = skip;
  while (global_step_ < total_steps) {
    EpochStats es;
    const auto t0 = Clock::now();
    feed->start(epoch);
    std::uint64_t b = 0;
    for (;;) {
      const auto tw = Clock::now();
      const StepInputs* in = feed->next();
      es.wait += seconds_since(tw);
      if (!in) break;
      // Replays the batches a resumed epoch already trained on: every worker's
      // stream advances exactly as it did, so later batches are bit-identical.
      if (b++ < skip) continue;
      StepStats s = model_->step(in->x, in->x_shape, in->target);
      es.sum.loss_sum += s.loss_sum;
      es.sum.correct += s.correct;
      es.sum.rows += s.rows;
      ++es.steps;
      ++global_step_;
      bar.add(1, s.rows * static_cast<std::uint64_t>(world));
      if (o_.checkpoint_every > 0 && global_step_ % o_.checkpoint_every == 0)
        save(epoch, b);
      if (global_step_ >= total_steps) break;
    }
    done_in_epoch = b;
    if (b < num_batches_ && global_step_ < total_steps)
      throw Error("epoch " + std::to_string(epoch) + ": the loader ended after " +
                  std::to_string(b) + " of " + std::to_string(num_batches_) + " batches");
    log_epoch(epoch, es, seconds_since(t0));
    if (done_in_epoch < num_batches_) break;  // stopped by --steps mid-epoch
    ++epoch;
    skip = 0;
  }
  bar.finish();
  if (!o_.save.empty()) {
    if (done_in_epoch == num_batches_) --epoch;  // save() moves on to the next epoch
    save(epoch, done_in_epoch);
    if (rank == 0) std::printf("ddp-train: saved %s\n", o_.save.c_str());
  }
}

}  // namespace

void run_training(const TrainOptions& o) { Run(o).go(); }

}  // namespace seedloader::train
