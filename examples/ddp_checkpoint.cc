// ddp_checkpoint: PyTorch's DDP tutorial "save and load checkpoints". Rank 0
// saves the model (safetensors, nn.Sequential names), every rank waits at a
// barrier, then every rank loads it and checks it holds rank 0's weights.
//   mpirun --allow-run-as-root --oversubscribe -np 2
//   build/default/examples/ddp_checkpoint
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "seedloader/ddp/mpi_communicator.h"
#include "tools/ddp_train/checkpoint.h"
#include "tools/ddp_train/train_model.h"

using namespace seedloader;

int main() {
  ddp::MpiCommunicator comm;
  train::TrainOptions o;
  o.model = "mlp:10,10,5";
  o.loss = train::Loss::kMse;
  // The seed makes every rank's initial weights the same; the Reducer would
  // broadcast rank 0's anyway.
  auto model = train::make_train_model(o, {10}, ddp::Device::kCpu, &comm, 1234);
  std::vector<train::Stage> stages = model->stages();
  const std::string path =
      (std::filesystem::temp_directory_path() / "ddp_checkpoint.safetensors").string();
  train::CheckpointState state;
  state.base_seed = 1234;
  state.world_size = static_cast<std::uint64_t>(comm.size());
  state.config = train::resume_config_json(o);
  if (comm.rank() == 0) train::save_checkpoint(path, stages, state);
  comm.barrier();  // nobody reads before rank 0 has renamed the file into place

  // Scramble this rank's weights, so only the load can bring rank 0's back.
  std::vector<float> before = stages[0].model->parameters_to_host();
  stages[0].model->load_parameters(std::vector<float>(before.size(), -1.0f));
  train::load_checkpoint(path, stages);
  std::vector<float> after = stages[0].model->parameters_to_host();
  const bool same = std::memcmp(before.data(), after.data(), before.size() * 4) == 0;
  std::printf("rank %d: loaded %s, %zu weights, %s\n", comm.rank(), path.c_str(),
              after.size(), same ? "identical to rank 0's" : "DIFFERENT");
  comm.barrier();
  if (comm.rank() == 0) {
    std::filesystem::remove(path);
    std::filesystem::remove(train::optimizer_file(path));
  }
  return same ? 0 : 1;
}
