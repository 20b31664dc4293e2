// Training checkpoints as safetensors files (readable by safetensors.torch.load_file):
//   "0.weight", "0.bias", ...              the weights, nn.Sequential names, F32
//   "optimizer.<param>.<state>"            momentum_buffer / exp_avg / exp_avg_sq, F32
//   "optimizer.step"                       steps taken, I64 [1]
//   __metadata__: format, format_version (2), config (JSON of the options a resume
//   must share), base_seed, epoch, epoch_samples (samples this rank consumed in
//   `epoch`), global_step, world_size, workers, dataset_size, dataset_fingerprint
//   (train_data.h's data_fingerprint), checksums and metadata_checksum.
// Checksums are XXH64 (xxHash, libxxhash) with seed 0, written as 16 lowercase hex
// digits (the value, most significant first: what `xxhsum -H1` prints). `checksums`
// is a JSON object of one per tensor, over its data bytes; `metadata_checksum` is
// over every other metadata entry, in ascending byte order of key, as key, NUL,
// value, NUL. So a flipped data byte or an edited schedule is caught, not trained on.
// Version 1 (a private 64-bit hash, metadata unchecked) is refused by name.
// Writing: the caller's rank 0 writes `path`.tmp, fsyncs it, renames it over `path`
// and fsyncs the directory; then every rank meets at a barrier and may read it. A
// failed save, or one ended by SIGINT, SIGTERM, SIGHUP or SIGXFSZ, removes `path`.tmp.
// Reading validates the whole file (safetensors.h's bounds checks, no trailing
// bytes, the format, every checksum, every tensor's presence, dtype and shape)
// before changing any weight; check_position() then checks the schedule against the
// run. Errors are DataError naming the file and the problem.
// These live beside ddp-train rather than in ddp/ because they name parameters
// through the model's stages (split models) and read files through loader/datasets.
// Pure functions of their arguments; not thread-safe on one model.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

inline constexpr int kCheckpointVersion = 2;

// Where training continues: the first batch not yet trained, as (epoch, batch in
// that epoch). A finished epoch is the next one's batch 0, so batch is always less
// than the epoch's batch count.
struct Position {
  std::uint64_t epoch = 0;
  std::uint64_t batch = 0;

  // The position after `done` of an epoch's `per_epoch` batches.
  static Position after(std::uint64_t epoch, std::uint64_t done,
                        std::uint64_t per_epoch) {
    return done == per_epoch ? Position{epoch + 1, 0} : Position{epoch, done};
  }
};

struct CheckpointState {
  std::uint64_t base_seed = 0;
  std::uint64_t epoch = 0;          // Position::epoch
  std::uint64_t epoch_samples = 0;  // on this rank, in `epoch`: Position::batch x batch
  std::uint64_t global_step = 0;
  std::uint64_t world_size = 1;
  std::uint64_t workers = 0;
  std::uint64_t dataset_size = 0;
  std::uint64_t dataset_fingerprint = 0;  // data_fingerprint()
  std::string config;                     // resume_config_json()

  // The file stores samples, not batches, so both need the run's batch size.
  Position position(std::uint64_t batch_size) const {
    return {epoch, epoch_samples / batch_size};
  }
  void set_position(Position p, std::uint64_t batch_size) {
    epoch = p.epoch;
    epoch_samples = p.batch * batch_size;
  }
};

// Writes the stages' weights and optimizer state and `state`, atomically.
// Throws Error when the file cannot be written.
void save_checkpoint(const std::string& path, std::span<const Stage> stages,
                     const CheckpointState& state);

// Validates `path` against the stages, then loads weights and optimizer state.
CheckpointState load_checkpoint(const std::string& path, std::span<const Stage> stages);

// Checks the schedule `s` (loaded from `path`) against the run resuming it, whose
// epochs have `per_epoch` batches of `batch_size` on each rank and which ends after
// `total_steps`: epoch_samples a whole number of batches before the epoch's end,
// global_step == epoch x per_epoch + batch, and global_step <= total_steps.
// Throws DataError naming the file and the value.
void check_position(const std::string& path, const CheckpointState& s,
                    std::uint64_t batch_size, std::uint64_t per_epoch,
                    std::uint64_t total_steps);

// The metadata_checksum of `metadata` (its own entry, if present, left out).
std::string metadata_checksum(const std::map<std::string, std::string>& metadata);

// The prefix torch's DistributedDataParallel and DataParallel put before every
// parameter name of the module they wrap.
inline constexpr const char* kWrappedPrefix = "module.";

// Loads only the weights (e.g. written by PyTorch: other tensors are ignored, no
// metadata needed). Every parameter must be present as F32 with its shape, under
// its nn.Sequential name or, all of them, under kWrappedPrefix + that name (a
// state dict saved from a wrapped model). Returns the prefix it read them under
// ("" or kWrappedPrefix). A torch.save file (zip or pickle) is a DataError that
// says so and how to convert it.
std::string load_weights(const std::string& path, std::span<const Stage> stages);

}  // namespace seedloader::train
