// data_parallel: PyTorch's "Optional: Data Parallelism" tutorial. One process
// holds a replica per device (here CPU replicas, one thread each); every batch is
// scattered along dim 0, each replica runs its slice, and the gradients are summed
// on the first replica, which steps and hands its weights to the others.
//   build/default/examples/data_parallel
#include <cstdio>
#include <vector>

#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"
#include "tools/ddp_train/data_parallel_model.h"

using namespace seedloader;

int main() {
  train::TrainOptions o;
  o.model = "mlp:5,2";
  o.loss = train::Loss::kMse;
  o.mode = train::Mode::kDataParallel;
  o.devices = {0, 1};
  train::DataParallelModel model(o, {5}, 3);
  std::printf("%zu replicas\n", model.num_replicas());
  Rng data{SeedSequence(9)};
  const std::int64_t rows = 30;  // 15 rows to each replica
  std::vector<float> x(rows * 5), y(rows * 2);
  for (float& v : x) v = static_cast<float>(normal(data));
  for (float& v : y) v = static_cast<float>(normal(data));
  for (int step = 0; step < 3; ++step) {
    train::StepStats s = model.step(x.data(), {rows, 5}, {.values = y.data()});
    std::printf("step %d: %llu rows over %zu replicas, loss %.4f\n", step,
                static_cast<unsigned long long>(s.rows), model.num_replicas(),
                s.loss_sum / s.rows);
  }
  return 0;
}
