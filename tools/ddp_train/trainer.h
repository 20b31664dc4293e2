// run_training: ddp-train's whole run on this rank — communicator, data, loader,
// model, optional --init / --resume, the epoch loop with per-epoch logs on rank 0,
// periodic and final checkpoints. Collective: every rank calls it with the same
// options and data, which the ranks check before the first step (rank_agreement.h):
// when they differ, or a local step fails on one rank, every rank throws. Throws
// ConfigError / DataError / CommError (main maps them to exit 2).
#pragma once

#include "tools/ddp_train/train_options.h"

namespace seedloader::train {

void run_training(const TrainOptions& o);

}  // namespace seedloader::train
