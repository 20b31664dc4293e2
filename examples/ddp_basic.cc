// ddp_basic: PyTorch's DDP tutorial "basic use case" with seedloader's ddp module.
// Every rank builds the same toy model (Linear 10->10, ReLU, Linear 10->5), the
// Reducer gives every rank rank 0's weights, and one SGD step on the rank's own
// random batch averages the gradients over all ranks.
//   mpirun --allow-run-as-root --oversubscribe -np 2 build/default/examples/ddp_basic
#include <cstdio>
#include <memory>
#include <vector>

#include "seedloader/ddp/layers.h"
#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/ddp/optimizer.h"
#include "seedloader/ddp/reducer.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"

using namespace seedloader;

int main() {
  ddp::MpiCommunicator comm;
  std::vector<std::unique_ptr<ddp::Layer>> layers;
  layers.push_back(std::make_unique<ddp::Linear>(10, 10));
  layers.push_back(std::make_unique<ddp::ReLU>());
  layers.push_back(std::make_unique<ddp::Linear>(10, 5));
  // Different seeds per rank on purpose: the Reducer broadcasts rank 0's weights.
  Rng init{SeedSequence(100 + static_cast<std::uint64_t>(comm.rank()))};
  ddp::Sequential model(std::move(layers), ddp::Device::kCpu, init);
  ddp::Reducer reducer(model, comm);
  ddp::Sgd sgd(model, {.lr = 0.001f});

  Rng data{SeedSequence(7, {static_cast<std::uint64_t>(comm.rank())})};
  std::vector<float> x(20 * 10), labels(20 * 5), grad(20 * 5);
  for (float& v : x) v = static_cast<float>(normal(data));
  for (float& v : labels) v = static_cast<float>(normal(data));

  model.zero_grad();
  const float* y = model.forward(x.data(), {20, 10});
  float loss = ddp::mse_loss(model.context(), y, labels.data(), grad.data(), 100);
  model.backward(grad.data());  // gradients are averaged over ranks here
  sgd.step();
  std::printf("rank %d of %d: loss %.4f, first weight after the step %.6f\n", comm.rank(),
              comm.size(), loss, model.parameters()[0]);
  return 0;
}
