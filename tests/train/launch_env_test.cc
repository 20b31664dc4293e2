// check_launch_env's rule, with the environment given as a map: launcher variables
// count only when present and in disagreement with the MPI world, and a Slurm
// batch script or an mpirun inside an allocation is never refused.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "seedloader/error.h"
#include "tools/ddp_train/launch_env.h"

namespace seedloader::train {
namespace {

using Env = std::map<std::string, std::string>;

// The message of the ConfigError check_launch_env throws; "" when it accepts.
std::string refusal(int rank, int size, const Env& vars) {
  auto env = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  try {
    check_launch_env(rank, size, env);
    return "";
  } catch (const ConfigError& e) {
    return e.what();
  }
}

TEST(LaunchEnvTest, NoLauncherVariablesAreAccepted) {
  EXPECT_EQ(refusal(0, 1, {}), "");
  EXPECT_EQ(refusal(3, 4, {}), "");
}

TEST(LaunchEnvTest, TorchrunWorldLargerThanMpisIsRefusedWithTheMpirunLine) {
  const std::string m = refusal(0, 1, {{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_NE(m.find("WORLD_SIZE=2 and RANK=1"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 0 of 1"), std::string::npos) << m;
  EXPECT_NE(m.find("mpirun -np 2"), std::string::npos) << m;
}

TEST(LaunchEnvTest, TorchrunVariablesThatMatchMpiAreAccepted) {
  EXPECT_EQ(refusal(1, 2, {{"RANK", "1"}, {"WORLD_SIZE", "2"}}), "");
  EXPECT_EQ(refusal(0, 1, {{"RANK", "0"}, {"WORLD_SIZE", "1"}}), "");
}

TEST(LaunchEnvTest, TorchrunRankThatDisagreesIsRefused) {
  EXPECT_NE(refusal(0, 2, {{"RANK", "1"}, {"WORLD_SIZE", "2"}}), "");
}

// RANK alone is too common a name to mean torchrun.
TEST(LaunchEnvTest, OnlyOneOfTheTorchrunPairIsIgnored) {
  EXPECT_EQ(refusal(0, 1, {{"RANK", "5"}}), "");
  EXPECT_EQ(refusal(0, 1, {{"WORLD_SIZE", "8"}}), "");
}

TEST(LaunchEnvTest, NonNumericLauncherValueIsRefusedByName) {
  const std::string m = refusal(0, 1, {{"RANK", "0"}, {"WORLD_SIZE", "two"}});
  EXPECT_NE(m.find("WORLD_SIZE=two"), std::string::npos) << m;
}

TEST(LaunchEnvTest, SrunStepOfSeveralTasksAsSingletonsIsRefusedWithThePmixLine) {
  const std::string m = refusal(
      0, 1,
      {{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "2"}});
  EXPECT_NE(m.find("srun started 4 tasks"), std::string::npos) << m;
  EXPECT_NE(m.find("srun -n 4 --mpi=pmix"), std::string::npos) << m;
}

// A batch script sees the allocation's SLURM_NTASKS and SLURM_PROCID=0, but no
// step variables.
TEST(LaunchEnvTest, SlurmBatchScriptRunningOneProcessIsAccepted) {
  EXPECT_EQ(refusal(0, 1, {{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}}), "");
}

// mpirun inside an allocation starts its daemons with srun; its ranks inherit that
// step's variables, whatever -np says.
TEST(LaunchEnvTest, MpirunInsideAnAllocationIsAccepted) {
  EXPECT_EQ(refusal(0, 1,
                    {{"SLURM_STEP_NUM_TASKS", "2"},
                     {"SLURM_PROCID", "0"},
                     {"OMPI_COMM_WORLD_SIZE", "1"}}),
            "");
}

TEST(LaunchEnvTest, SrunWithPmixIsAccepted) {
  EXPECT_EQ(refusal(2, 4, {{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "2"}}), "");
  EXPECT_EQ(refusal(0, 1, {{"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"}}), "");
}

}  // namespace
}  // namespace seedloader::train
