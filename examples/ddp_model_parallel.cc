// ddp_model_parallel: PyTorch's DDP tutorial "combining DDP with model
// parallelism". Each rank splits its model in two stages, on devices 2*rank and
// 2*rank+1 (modulo the devices present; on a CPU-only machine both are the CPU),
// activations cross forward and their gradients back, and DDP averages both
// stages' gradients over the ranks. Prints each step's loss on rank 0.
//   mpirun --allow-run-as-root --oversubscribe -np 2
//   build/default/examples/ddp_model_parallel
#include <cstdio>
#include <vector>

#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"
#include "tools/ddp_train/train_model.h"

using namespace seedloader;

int main() {
  ddp::MpiCommunicator comm;
  train::TrainOptions o;
  o.model = "mlp:10,10,10,5";  // Linear, ReLU | Linear, ReLU, Linear
  o.loss = train::Loss::kMse;
  o.lr = 0.01f;
  o.mode = train::Mode::kModelParallel;
  o.split = 2;
  auto model = train::make_train_model(o, {10}, ddp::Device::kCpu, &comm, 42);
  const int devices = ddp::cuda_device_available() ? 1 : 0;
  if (comm.rank() == 0)
    std::printf("stage devices per rank: %s\n",
                devices ? "2*rank, 2*rank+1 modulo the GPUs" : "cpu, cpu (no GPU)");
  Rng data{SeedSequence(5, {static_cast<std::uint64_t>(comm.rank())})};
  std::vector<float> x(16 * 10), y(16 * 5);
  for (float& v : x) v = static_cast<float>(normal(data));
  for (float& v : y) v = static_cast<float>(normal(data));
  for (int step = 0; step < 5; ++step) {
    train::StepStats s = model->step(x.data(), {16, 10}, {.values = y.data()});
    if (comm.rank() == 0)
      std::printf("step %d: loss on rank 0 %.4f\n", step, s.loss_sum / s.rows);
  }
  return 0;
}
