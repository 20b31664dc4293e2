// Training checkpoints as two safetensors files, written by one save:
//   PATH          the model's weights only, under nn.Sequential's names ("0.weight",
//                 "0.bias", ...) and PyTorch's layouts (Linear [out, in], Conv2d
//                 [out, in, kh, kw]), F32, so that
//                 model.load_state_dict(safetensors.torch.load_file(PATH), strict=True)
//                 loads it. __metadata__ (which load_file ignores): format,
//                 format_version (3), config (JSON of the options a resume must
//                 share), base_seed, epoch, epoch_samples (samples each rank consumed
//                 in `epoch`), global_step, world_size, workers, dataset_size,
//                 dataset_fingerprint (train_data.h's data_fingerprint),
//                 optimizer_file (the companion's file name), optimizer_checksum (the
//                 companion's metadata_checksum), checksums and metadata_checksum;
//                 and run (0 for a fresh run, one more per resume; files written
//                 before it existed read as 0); and mixture, for a mixture (--data
//                 mix:...), its position and history (mixture_checkpoint.h).
//                 epoch_samples stays per rank under either partition, so older
//                 files read as before: the batch to continue at is epoch_samples /
//                 the per-rank batch size of the run that saved, which is config's
//                 batch_size (strided) or config's global_batch_size / world_size
//                 (elastic, where that batch is a global batch: the same for the
//                 world size resuming).
//   PATH.optim    the companion (optimizer_file()): "<param>.<state>" tensors
//                 (momentum_buffer; exp_avg, exp_avg_sq), F32, and "step", I64 [1];
//                 __metadata__: format (seedloader.ddp-train.optimizer),
//                 format_version, optimizer (optimizer_json()), params (the parameter
//                 names in the optimizer's order, JSON), global_step, checksums and
//                 metadata_checksum.
// Checksums are XXH64 (xxHash, libxxhash) with seed 0, written as 16 lowercase hex
// digits (the value, most significant first: what `xxhsum -H1` prints). `checksums`
// is a JSON object of one per tensor, over its data bytes; `metadata_checksum` is
// over every other metadata entry, in ascending byte order of key, as key, NUL,
// value, NUL. So a flipped data byte or an edited schedule is caught, not trained on,
// and since PATH's sealed metadata records its companion's checksum, a companion
// from another save is refused too.
// Versions 1 (a private 64-bit hash) and 2 (optimizer state inside PATH) are
// refused by name.
// Writing: the caller's rank 0 writes both as NAME.tmp and fsyncs them, renames the
// companion and then PATH over the old files, and fsyncs the directory; then every
// rank meets at a barrier and may read them. A failed save, or one ended by SIGINT,
// SIGTERM, SIGHUP or SIGXFSZ, removes both .tmp files. A crash between the two
// renames leaves a new companion beside the old PATH: resuming from it is refused.
// Reading validates both files whole (safetensors.h's bounds checks, no trailing
// bytes, the format, every checksum, the pairing, every tensor's presence, dtype and
// shape) before changing any weight; check_position() then checks the schedule
// against the run. Errors are DataError naming the file and the problem.
// These live beside ddp-train rather than in ddp/ because they name parameters
// through the model's stages (split models) and read files through loader/datasets.
// Pure functions of their arguments; not thread-safe on one model.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "seedloader/loader_options.h"
#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

inline constexpr int kCheckpointVersion = 3;

// The companion of checkpoint `path` (its optimizer state): `path` + kOptimizerSuffix.
inline constexpr const char* kOptimizerSuffix = ".optim";
std::string optimizer_file(const std::string& path);

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
  std::uint64_t epoch_samples = 0;  // on each rank, in `epoch`: Position::batch x batch
  std::uint64_t global_step = 0;
  std::uint64_t run = 0;  // resumes since the fresh run (--trace's "run")
  std::uint64_t world_size = 1;
  std::uint64_t workers = 0;
  std::uint64_t dataset_size = 0;
  std::uint64_t dataset_fingerprint = 0;  // data_fingerprint()
  std::string config;                     // resume_config_json()
  std::string optimizer;                  // optimizer_json(), for PyTorch
  SkipList skip;  // the run's declared skips (absent from older checkpoints: none)
  // A mixture's position (mixture_checkpoint.h's JSON); empty for other data.
  std::string mixture;

  // The file stores samples, not batches, so both need the saving run's per-rank
  // batch size.
  Position position(std::uint64_t batch_size) const {
    return {epoch, epoch_samples / batch_size};
  }
  void set_position(Position p, std::uint64_t batch_size) {
    epoch = p.epoch;
    epoch_samples = p.batch * batch_size;
  }
};

// Writes the stages' weights to `path` and their optimizer state to its companion,
// with `state`, atomically. Throws Error when a file cannot be written.
void save_checkpoint(const std::string& path, std::span<const Stage> stages,
                     const CheckpointState& state);

// Validates `path` and its companion against the stages and each other, then loads
// weights and optimizer state. A missing companion is a DataError naming it.
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
