// TrainModel: a model, its optimizer and the way one training step runs, for the
// three modes ddp-train offers:
//   ddp     one Sequential per rank; a Reducer averages gradients over ranks
//   ddp-mp  per rank, the first K layers on one device and the rest on another;
//           activations cross forward, their gradients back; one Reducer per stage
//   dp      one process, replicas (one thread each) get slices of the batch along
//           dim 0; gradients are summed on the first replica, which steps, and the
//           others receive its weights
// Every mode computes the mean loss over the (rank's) whole batch, so all three
// train the same function. stages() exposes the Sequentials and optimizers that
// hold the state, with the layer offset that turns a stage's parameter names into
// the whole model's nn.Sequential names (for checkpoints and --init).
// Owns its models, optimizers and reducers. Not thread-safe (dp's threads are its own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "seedloader/ddp/communicator.h"
#include "seedloader/ddp/optimizer.h"
#include "seedloader/ddp/sequential.h"
#include "tools/ddp_train/train_options.h"

namespace seedloader::train {

// A step's target, on the model's device: float values (mse, same shape as the
// output) or int32 class labels (xent, one per row).
struct Target {
  const float* values = nullptr;
  const std::int32_t* labels = nullptr;
};

struct StepStats {
  double loss_sum = 0;  // loss x rows, so stats add up across steps
  std::uint64_t correct = 0;
  std::uint64_t rows = 0;
};

struct Stage {
  ddp::Sequential* model = nullptr;
  ddp::Optimizer* optimizer = nullptr;
  int name_shift = 0;  // whole-model layer index = stage layer index + name_shift
};

// "3.weight" with shift 2 -> "5.weight".
std::string shifted_name(const std::string& local, int shift);

class TrainModel {
 public:
  virtual ~TrainModel() = default;
  // One optimizer step on `x` (shape [rows, ...]) and its target, both on device().
  virtual StepStats step(const float* x, const ddp::Shape& x_shape, const Target& t) = 0;
  virtual std::vector<Stage> stages() = 0;
  // Makes every copy of the weights agree after stages() were loaded into.
  virtual void sync_copies() {}
  virtual ddp::Device device() const = 0;
};

// Builds the model the options name, for one sample of shape `sample`, initialised
// from `seed` (identically on every rank). `comm` is needed in ddp and ddp-mp
// (collective: every rank builds its model at the same point).
std::unique_ptr<TrainModel> make_train_model(const TrainOptions& o,
                                             const ddp::Shape& sample, ddp::Device device,
                                             ddp::Communicator* comm, std::uint64_t seed);

// Computes the mean loss of `y` ([rows, outputs]) against `t` into stats and writes
// d loss / d y, scaled by `scale` (a slice's share of the whole batch), into `grad`.
StepStats apply_loss(Loss loss, const ddp::ExecContext& ctx, const float* y,
                     const ddp::Shape& y_shape, const Target& t, float* grad,
                     float scale);

std::unique_ptr<ddp::Optimizer> make_optimizer(const TrainOptions& o,
                                               ddp::Sequential& model);

// The hyperparameters make_optimizer() uses, as JSON under PyTorch's param_group
// names plus "name" (sgd | adamw), for checkpoints that PyTorch continues from.
std::string optimizer_json(const TrainOptions& o);

}  // namespace seedloader::train
