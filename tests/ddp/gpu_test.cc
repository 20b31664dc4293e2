// The CUDA paths: cuBLAS/kernel layers agree with the CPU layers (forward, backward,
// optimizer steps), and NcclCommunicator + Reducer work at world size 1. Every test
// skips, saying why, when no CUDA device is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "seedloader/ddp/device.h"
#include "seedloader/ddp/layers.h"
#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/nccl_communicator.h"
#include "seedloader/ddp/optimizer.h"
#include "seedloader/ddp/reducer.h"
#include "seedloader/ddp/sequential.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"

namespace seedloader::ddp {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device visible"

std::unique_ptr<Sequential> convnet(Device device) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Conv2d>(2, 4, 3, 1, 1));
  layers.push_back(std::make_unique<ReLU>());
  layers.push_back(std::make_unique<Conv2d>(4, 4, 3, 2, 1));
  layers.push_back(std::make_unique<MaxPool2d>(2));
  layers.push_back(std::make_unique<Flatten>());
  layers.push_back(std::make_unique<Linear>(4 * 2 * 2, 5));
  Rng rng{SeedSequence(3)};
  return std::make_unique<Sequential>(std::move(layers), device, rng);
}

void expect_near_all(const std::vector<float>& gpu, const std::vector<float>& cpu,
                     const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t i = 0; i < gpu.size(); ++i)
    ASSERT_NEAR(gpu[i], cpu[i], 1e-4f + 1e-4f * std::abs(cpu[i])) << what << " " << i;
}

// Trains both models for three steps on the same data with `make_opt`, comparing
// losses, gradients and parameters after every step.
template <typename MakeOpt>
void train_and_compare(MakeOpt make_opt) {
  auto cpu = convnet(Device::kCpu);
  auto gpu = convnet(Device::kCuda);
  expect_near_all(gpu->parameters_to_host(), cpu->parameters_to_host(), "init");
  auto cpu_opt = make_opt(*cpu);
  auto gpu_opt = make_opt(*gpu);
  Rng rng{SeedSequence(4)};
  const int64_t n = 6;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> x(n * 2 * 8 * 8);
    std::vector<int32_t> labels(n);
    for (auto& v : x) v = static_cast<float>(normal(rng));
    for (auto& l : labels) l = static_cast<int32_t>(bounded(rng, 5));
    DeviceArray<float> dx(Device::kCuda, x.size()), dgrad(Device::kCuda, n * 5);
    DeviceArray<int32_t> dlabels(Device::kCuda, n);
    dx.copy_from_host(x);
    dlabels.copy_from_host(labels);
    std::vector<float> grad(n * 5);

    cpu->zero_grad();
    gpu->zero_grad();
    const float* zc = cpu->forward(x.data(), {n, 2, 8, 8});
    const float* zg = gpu->forward(dx.data(), {n, 2, 8, 8});
    const float lc =
        cross_entropy_loss(cpu->context(), zc, labels.data(), grad.data(), n, 5);
    const float lg =
        cross_entropy_loss(gpu->context(), zg, dlabels.data(), dgrad.data(), n, 5);
    EXPECT_NEAR(lg, lc, 1e-4f * (1 + std::abs(lc)));
    cpu->backward(grad.data());
    gpu->backward(dgrad.data());
    expect_near_all(gpu->gradients_to_host(), cpu->gradients_to_host(), "gradients");
    cpu_opt->step();
    gpu_opt->step();
    expect_near_all(gpu->parameters_to_host(), cpu->parameters_to_host(), "parameters");
  }
}

TEST(GpuTest, SgdTrainingOnGpuMatchesCpu) {
  SKIP_WITHOUT_GPU();
  train_and_compare([](Sequential& m) {
    return std::make_unique<Sgd>(m, SgdOptions{0.1f, 0.9f, 0.0f, 1e-3f, true});
  });
}

TEST(GpuTest, AdamWTrainingOnGpuMatchesCpu) {
  SKIP_WITHOUT_GPU();
  train_and_compare(
      [](Sequential& m) { return std::make_unique<AdamW>(m, AdamWOptions{}); });
}

TEST(GpuTest, MseLossOnGpuMatchesCpu) {
  SKIP_WITHOUT_GPU();
  std::vector<float> y = {1, 2, 3, 4}, t = {0.5f, 2, 1, 5}, g(4);
  DeviceArray<float> dy(Device::kCuda, 4), dt(Device::kCuda, 4), dg(Device::kCuda, 4);
  dy.copy_from_host(y);
  dt.copy_from_host(t);
  GpuContext gpu;
  ExecContext ctx{Device::kCuda, &gpu};
  const float lg = mse_loss(ctx, dy.data(), dt.data(), dg.data(), 4);
  const float lc = mse_loss(ExecContext{}, y.data(), t.data(), g.data(), 4);
  EXPECT_NEAR(lg, lc, 1e-6f);
  expect_near_all(dg.to_host(), g, "mse gradient");
}

MpiCommunicator& world() {
  static auto session = MpiSession::acquire();
  static MpiCommunicator comm;
  return comm;
}

TEST(NcclTest, AllreduceBroadcastAndBarrierAtWorldSizeOne) {
  SKIP_WITHOUT_GPU();
  NcclCommunicator nccl(world());
  for (std::size_t n : {0, 1, 10, 1000, 1000000}) {
    std::vector<float> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = float(i % 997);
    DeviceArray<float> d(Device::kCuda, n);
    d.copy_from_host(host);
    nccl.allreduce(d.span());
    nccl.allreduce_average(d.span());
    EXPECT_EQ(d.to_host(), host) << n << " elements";
    nccl.broadcast(d.span(), 0);
    EXPECT_EQ(d.to_host(), host) << n << " elements";
  }
  std::vector<std::int64_t> ints = {1, std::int64_t{1} << 40};
  nccl.broadcast(std::span<std::int64_t>(ints), 0);
  EXPECT_EQ(ints[1], std::int64_t{1} << 40);
  nccl.barrier();
}

// Integers are staged through the device and come back exact, far above float's
// 2^24 and double's 2^53.
TEST(NcclTest, Int64AllreduceAndAnyAreExactAtWorldSizeOne) {
  SKIP_WITHOUT_GPU();
  NcclCommunicator nccl(world());
  EXPECT_EQ(nccl.cuda_device(), world().local_rank());
  const std::vector<std::int64_t> start = {(std::int64_t{1} << 24) + 1,
                                           (std::int64_t{1} << 53) + 1, -7,
                                           std::numeric_limits<std::int64_t>::max()};
  for (IntReduceOp op : {IntReduceOp::kSum, IntReduceOp::kMin, IntReduceOp::kMax}) {
    std::vector<std::int64_t> v = start;
    nccl.allreduce(std::span<std::int64_t>(v), op);
    EXPECT_EQ(v, start);
  }
  EXPECT_TRUE(nccl.any(true));
  EXPECT_FALSE(nccl.any(false));
}

TEST(NcclTest, ReducerOnGpuKeepsWorldSizeOneGradients) {
  SKIP_WITHOUT_GPU();
  auto model = convnet(Device::kCuda);
  auto reference = convnet(Device::kCuda);
  NcclCommunicator nccl(world());
  nccl.set_compute_stream(model->context().gpu->stream());
  Reducer reducer(*model, nccl, ReducerOptions{16, 64});
  EXPECT_GE(reducer.buckets().size(), 3u);
  std::vector<float> x(4 * 2 * 8 * 8, 0.25f);
  std::vector<int32_t> labels = {0, 1, 2, 3};
  DeviceArray<float> dx(Device::kCuda, x.size()), dgrad(Device::kCuda, 20);
  DeviceArray<int32_t> dlabels(Device::kCuda, 4);
  dx.copy_from_host(x);
  dlabels.copy_from_host(labels);
  for (Sequential* m : {model.get(), reference.get()}) {
    m->zero_grad();
    const float* z = m->forward(dx.data(), {4, 2, 8, 8});
    cross_entropy_loss(m->context(), z, dlabels.data(), dgrad.data(), 4, 5);
    m->backward(dgrad.data());
  }
  expect_near_all(model->gradients_to_host(), reference->gradients_to_host(), "grads");
}

}  // namespace
}  // namespace seedloader::ddp
