// check_launch_env: refuses a ddp-train start whose launcher promised more ranks
// than MPI delivered, such as `torchrun --nproc-per-node 2 ddp-train` or `srun -n 2
// ddp-train` without PMIx: each process then becomes an MPI singleton (world size
// 1) and trains the whole data set alone, all of them writing the same --save.
// The rule, so that a plain `mpirun` is never refused:
// - torchrun: when RANK and WORLD_SIZE are both set, they must equal the MPI rank
//   and world size.
// - Slurm: only an srun step's task counts, told apart from a batch script (which
//   has SLURM_NTASKS and SLURM_PROCID=0 for the whole allocation) by
//   SLURM_STEP_NUM_TASKS. When that and SLURM_PROCID are set, the MPI world has
//   one rank, and OpenMPI did not start the process (no OMPI_COMM_WORLD_SIZE: an
//   `mpirun` inside an allocation starts its daemons as a step of their own, whose
//   variables its ranks inherit), SLURM_STEP_NUM_TASKS must be 1.
// A disagreement is a ConfigError that says how to launch N ranks. Pure function
// of its arguments and the environment it is given; thread-safe.
#pragma once

#include <functional>

namespace seedloader::train {

// Looks up an environment variable: nullptr when unset (the shape of getenv).
using EnvLookup = std::function<const char*(const char*)>;

// Throws ConfigError when the launcher's variables disagree with the MPI world of
// `mpi_size` ranks in which this process is `mpi_rank`.
void check_launch_env(int mpi_rank, int mpi_size, const EnvLookup& env);

}  // namespace seedloader::train
