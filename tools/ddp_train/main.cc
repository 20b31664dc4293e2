// ddp-train: data-parallel training fed by seedloader's DataLoader. Launch with
// `mpirun -np N ddp-train ...` or `srun --mpi=pmix` (or without either as one rank);
// torchrun or srun variables that disagree with the MPI world are refused, and
// ranks that see other data or options stop before the first step. Exit codes:
// 0 done, 2 usage, input or runtime error (the message names the file, option or
// rank).
#include <cstdio>
#include <exception>

#include "seedloader/error.h"
#include "tools/common/error_text.h"
#include "tools/ddp_train/trainer.h"

int main(int argc, char** argv) {
  using namespace seedloader::train;
  CLI::App app{
      "ddp-train: train a model data-parallel (DDP), one DataLoader per rank sharded by "
      "a\n"
      "DistributedSampler. Launch with mpirun -np N (or srun --mpi=pmix); NCCL on GPUs,\n"
      "MPI on CPUs. Every rank must get the same options and data (checked before\n"
      "the first step).\n"
      "Checkpoints are safetensors files; --resume continues bit-identically."};
  seedloader::tools::redact_parse_errors(app);
  TrainOptions o;
  add_train_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    run_training(o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp-train: %s\n", seedloader::tools::error_text(e).c_str());
    std::fflush(stderr);
    return 2;
  }
}
