// Training checkpoints as safetensors files (readable by safetensors.torch.load_file):
//   "0.weight", "0.bias", ...              the weights, nn.Sequential names, F32
//   "optimizer.<param>.<state>"            momentum_buffer / exp_avg / exp_avg_sq, F32
//   "optimizer.step"                       steps taken, I64 [1]
//   __metadata__: format, format_version, config (JSON of the options a resume must
//   share), base_seed, epoch, epoch_samples (samples this rank consumed in `epoch`),
//   global_step, world_size, workers, and checksums (a 64-bit hash per tensor, so a
//   flipped data byte is caught, not trained on).
// Writing: the caller's rank 0 writes `path`.tmp, fsyncs it, renames it over `path`
// and fsyncs the directory; then every rank meets at a barrier and may read it.
// Reading validates the whole file (safetensors.h's bounds checks, the format, every
// checksum, every tensor's presence, dtype and shape) before changing any weight.
// Errors are DataError naming the file and the problem.
// These live beside ddp-train rather than in ddp/ because they name parameters
// through the model's stages (split models) and read files through loader/datasets.
// Pure functions of their arguments; not thread-safe on one model.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

inline constexpr int kCheckpointVersion = 1;

struct CheckpointState {
  std::uint64_t base_seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t epoch_samples = 0;  // on this rank, in `epoch`
  std::uint64_t global_step = 0;
  std::uint64_t world_size = 1;
  std::uint64_t workers = 0;
  std::string config;  // resume_config_json()
};

// Writes the stages' weights and optimizer state and `state`, atomically.
// Throws Error when the file cannot be written.
void save_checkpoint(const std::string& path, std::span<const Stage> stages,
                     const CheckpointState& state);

// Validates `path` against the stages, then loads weights and optimizer state.
CheckpointState load_checkpoint(const std::string& path, std::span<const Stage> stages);

// Loads only the weights (e.g. written by PyTorch: other tensors are ignored, no
// metadata needed). Every parameter must be present as F32 with its shape.
void load_weights(const std::string& path, std::span<const Stage> stages);

}  // namespace seedloader::train
