#include "tools/ddp_train/launch_env.h"

#include <charconv>
#include <optional>
#include <string>

#include "seedloader/error.h"

namespace seedloader::train {
namespace {

// The variable's value as a non-negative integer; nullopt when it is unset.
// Throws ConfigError for a value that is set but not such a number.
std::optional<long long> env_int(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (!v) return std::nullopt;
  const std::string s(v);
  long long n = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < 0)
    throw ConfigError(std::string(name) + "=" + s +
                      " is not a rank or task count; ddp-train takes its ranks from "
                      "MPI (unset it, or launch with mpirun -np N)");
  return n;
}

std::string launch_hint(long long n) {
  const std::string np = std::to_string(n);
  return "launch one process per rank through MPI instead: mpirun -np " + np +
         " ddp-train ..., or srun -n " + np +
         " --mpi=pmix ddp-train ... under Slurm (torchrun does not start MPI ranks)";
}

}  // namespace

void check_launch_env(int mpi_rank, int mpi_size, const EnvLookup& env) {
  const auto rank = env_int(env, "RANK");
  const auto world = env_int(env, "WORLD_SIZE");
  if (rank && world && (*world != mpi_size || *rank != mpi_rank))
    throw ConfigError("WORLD_SIZE=" + std::to_string(*world) +
                      " and RANK=" + std::to_string(*rank) +
                      " (torchrun's variables) disagree with MPI, which started this "
                      "process as rank " +
                      std::to_string(mpi_rank) + " of " + std::to_string(mpi_size) +
                      "; every process would train alone on the whole data set. " +
                      launch_hint(*world));
  if (mpi_size != 1 || env("OMPI_COMM_WORLD_SIZE")) return;
  const auto tasks = env_int(env, "SLURM_STEP_NUM_TASKS");
  const auto procid = env_int(env, "SLURM_PROCID");
  if (tasks && procid && *tasks != 1)
    throw ConfigError("srun started " + std::to_string(*tasks) +
                      " tasks (SLURM_STEP_NUM_TASKS) but MPI sees a world of one rank "
                      "(srun without PMIx); every task would train alone on the whole "
                      "data set. " +
                      launch_hint(*tasks));
}

}  // namespace seedloader::train
