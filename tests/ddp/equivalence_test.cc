// PyTorch's own DDP check: W ranks with a per-rank batch of B rows, five SGD steps,
// end with the same parameters as one process training on the W*B rows (fp32
// tolerance), with bucket caps forced tiny so many buckets are in flight. Also:
// no_sync accumulation, rank 0's parameters reaching every rank, and a shape
// mismatch across ranks failing with the parameter's name.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/ddp/optimizer.h"
#include "seedloader/ddp/reducer.h"
#include "seedloader/error.h"
#include "tests/ddp/test_models.h"

namespace seedloader::ddp {
namespace {

using testing_models::Batch;

constexpr int64_t kPerRank = 4;
constexpr std::uint64_t kSeed = 42;

// Forward, loss, backward on one batch. Returns the loss.
float forward_backward(Sequential& model, const Batch& b, bool conv) {
  const float* out = model.forward(b.x.data(), b.x_shape);
  std::vector<float> grad(static_cast<std::size_t>(element_count(model.output_shape())));
  const int64_t n = b.x_shape[0];
  float loss =
      conv ? cross_entropy_loss(model.context(), out, b.labels.data(), grad.data(), n, 3)
           : mse_loss(model.context(), out, b.y.data(), grad.data(), n * 4);
  model.backward(grad.data());
  return loss;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), 1e-5 + 1.3e-6 * std::abs(want[i]))
        << what << " element " << i << ": " << got[i] << " vs " << want[i];
}

class EquivalenceTest : public ::testing::TestWithParam<bool> {};

TEST_P(EquivalenceTest, DdpTrainingEqualsOneProcessOnTheWholeBatch) {
  const bool conv = GetParam();
  MpiCommunicator comm;
  const int world = comm.size();
  // Each rank starts from different parameters; the Reducer must broadcast rank 0's.
  auto model = conv ? testing_models::convnet(kSeed + comm.rank())
                    : testing_models::mlp(kSeed + comm.rank());
  auto reference = conv ? testing_models::convnet(kSeed) : testing_models::mlp(kSeed);
  Reducer reducer(*model, comm, ReducerOptions{4, 64});
  ASSERT_GE(reducer.buckets().size(), 3u);
  expect_close(model->parameters_to_host(), reference->parameters_to_host(), "broadcast");

  SgdOptions opt{0.05f, 0.9f, 0.0f, 1e-3f, false};
  Sgd sgd(*model, opt), ref_sgd(*reference, opt);
  for (int step = 0; step < 5; ++step) {
    Batch full = testing_models::make_batch(conv, world * kPerRank, step);
    Batch mine = testing_models::slice(full, conv, comm.rank() * kPerRank, kPerRank);
    model->zero_grad();
    forward_backward(*model, mine, conv);
    if (world > 1) EXPECT_GT(reducer.buckets_started_early(), 0u) << "step " << step;
    sgd.step();
    reference->zero_grad();
    forward_backward(*reference, full, conv);
    ref_sgd.step();
    expect_close(model->gradients_to_host(), reference->gradients_to_host(),
                 "gradients at step " + std::to_string(step));
  }
  expect_close(model->parameters_to_host(), reference->parameters_to_host(),
               "parameters after 5 steps");
}

INSTANTIATE_TEST_SUITE_P(Models, EquivalenceTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "ConvNet" : "Mlp"; });

TEST(NoSyncTest, GradientsStayLocalInsideTheScopeAndSyncAfter) {
  MpiCommunicator comm;
  const int world = comm.size();
  auto model = testing_models::mlp(kSeed);
  auto reference = testing_models::mlp(kSeed);
  Reducer reducer(*model, comm, ReducerOptions{64, 128});

  Batch full_a = testing_models::make_batch(false, world * kPerRank, 10);
  Batch full_b = testing_models::make_batch(false, world * kPerRank, 11);
  model->zero_grad();
  {
    auto guard = reducer.no_sync();
    forward_backward(
        *model, testing_models::slice(full_a, false, comm.rank() * kPerRank, kPerRank),
        false);
  }
  // Inside the scope: this rank's own gradient, not the average.
  auto local = model->gradients_to_host();
  reference->zero_grad();
  forward_backward(*reference, full_a, false);
  auto synced_a = reference->gradients_to_host();
  if (world > 1) {
    double diff = 0;
    for (std::size_t i = 0; i < local.size(); ++i)
      diff += std::abs(local[i] - synced_a[i]);
    EXPECT_GT(diff, 1e-3) << "no_sync gradients already equal the averaged ones";
  } else {
    expect_close(local, synced_a, "world 1 no_sync");
  }
  // After the scope: the accumulated gradients of both batches, averaged.
  forward_backward(*model,
                   testing_models::slice(full_b, false, comm.rank() * kPerRank, kPerRank),
                   false);
  forward_backward(*reference, full_b, false);
  expect_close(model->gradients_to_host(), reference->gradients_to_host(),
               "after no_sync");
}

TEST(ReducerTest, BucketsCoverGradientsInReverseParameterOrder) {
  MpiCommunicator comm;
  auto model = testing_models::mlp(kSeed);
  Reducer reducer(*model, comm, ReducerOptions{64, 600});
  const auto& info = model->param_info();
  std::size_t expect_end = model->gradients().size();
  std::size_t expect_param = info.size();
  for (const auto& b : reducer.buckets()) {
    EXPECT_EQ(b.offset + b.count, expect_end);
    for (std::size_t p : b.params) EXPECT_EQ(p, --expect_param);
    expect_end = b.offset;
  }
  EXPECT_EQ(expect_end, 0u);
  EXPECT_EQ(expect_param, 0u);
  // First bucket: 4.bias alone would be 16 bytes < 64, so 4.weight joins it.
  EXPECT_EQ(reducer.buckets()[0].params, (std::vector<std::size_t>{5, 4}));
}

TEST(ReducerTest, ShapeMismatchAcrossRanksNamesTheParameter) {
  MpiCommunicator comm;
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  auto model = testing_models::mlp(kSeed, comm.rank() == 1 ? 12 : 16);
  try {
    Reducer reducer(*model, comm);
    FAIL() << "no CommError for mismatched shapes";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("'0.weight'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace seedloader::ddp
