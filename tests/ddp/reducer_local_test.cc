// Reducer at world size 1 over LocalCommunicator: buckets, hooks and no_sync behave
// without MPI, and mismatched devices are refused.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "seedloader/ddp/local_communicator.h"
#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/reducer.h"
#include "seedloader/error.h"
#include "tests/ddp/test_models.h"

namespace seedloader::ddp {
namespace {

std::vector<float> gradients_after_step(Sequential& model) {
  auto batch = testing_models::make_batch(false, 6, 0);
  model.zero_grad();
  const float* y = model.forward(batch.x.data(), batch.x_shape);
  std::vector<float> dy(24);
  mse_loss(model.context(), y, batch.y.data(), dy.data(), 24);
  model.backward(dy.data());
  return model.gradients_to_host();
}

TEST(ReducerLocalTest, WorldOfOneLeavesGradientsAsComputed) {
  LocalCommunicator comm;
  auto model = testing_models::mlp(3);
  auto plain = testing_models::mlp(3);
  Reducer reducer(*model, comm, ReducerOptions{4, 64});
  EXPECT_EQ(reducer.buckets().size(), 6u);  // every parameter its own bucket here
  EXPECT_EQ(gradients_after_step(*model), gradients_after_step(*plain));
  EXPECT_EQ(reducer.buckets_started_early(), 5u);  // all but the last overlapped
}

// Wraps a communicator and counts the all-reduces issued through it.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Device device() const override { return inner_.device(); }
  std::unique_ptr<Work> iallreduce(std::span<float> data, ReduceOp op) override {
    ++allreduces;
    return inner_.iallreduce(data, op);
  }
  void broadcast(std::span<float> d, int root) override { inner_.broadcast(d, root); }
  void broadcast(std::span<std::int64_t> d, int root) override {
    inner_.broadcast(d, root);
  }
  void barrier() override { inner_.barrier(); }
  int allreduces = 0;

 private:
  void allreduce_int64(std::span<std::int64_t> d, IntReduceOp op) override {
    inner_.allreduce(d, op);
  }

  Communicator& inner_;
};

TEST(ReducerLocalTest, NoSyncIssuesNoCollectivesAndTheNextBackwardSyncsEveryBucket) {
  LocalCommunicator local;
  CountingCommunicator comm(local);
  auto model = testing_models::mlp(3);
  Reducer reducer(*model, comm, ReducerOptions{4, 64});
  const int at_start = comm.allreduces;  // shape verification uses a few
  {
    auto guard = reducer.no_sync();
    gradients_after_step(*model);
    gradients_after_step(*model);
  }
  EXPECT_EQ(comm.allreduces, at_start);
  gradients_after_step(*model);
  EXPECT_EQ(comm.allreduces, at_start + static_cast<int>(reducer.buckets().size()));
}

TEST(ReducerLocalTest, NestedNoSyncStaysLocalUntilTheOuterScopeEnds) {
  LocalCommunicator local;
  CountingCommunicator comm(local);
  auto model = testing_models::mlp(3);
  Reducer reducer(*model, comm, ReducerOptions{4, 64});
  const int at_start = comm.allreduces;
  {
    auto outer = reducer.no_sync();
    { auto inner = reducer.no_sync(); }
    gradients_after_step(*model);
  }
  EXPECT_EQ(comm.allreduces, at_start);
}

TEST(ReducerLocalTest, CommunicatorOnAnotherDeviceIsConfigError) {
  LocalCommunicator gpu_comm(Device::kCuda);
  auto model = testing_models::mlp(3);
  EXPECT_THROW(Reducer(*model, gpu_comm), ConfigError);
}

TEST(ReducerLocalTest, ZeroBucketCapIsConfigError) {
  LocalCommunicator comm;
  auto model = testing_models::mlp(3);
  EXPECT_THROW(Reducer(*model, comm, ReducerOptions{0, 64}), ConfigError);
}

// Over one rank every integer reduction is the identity, exact even for values
// float (2^24 + 1) and double (2^53 + 1) would round.
TEST(LocalCommunicatorTest, Int64AllreduceKeepsEveryValueExact) {
  LocalCommunicator comm;
  const std::vector<std::int64_t> start = {(std::int64_t{1} << 24) + 1,
                                           (std::int64_t{1} << 53) + 1, -3,
                                           std::numeric_limits<std::int64_t>::min()};
  for (IntReduceOp op : {IntReduceOp::kSum, IntReduceOp::kMin, IntReduceOp::kMax}) {
    std::vector<std::int64_t> v = start;
    comm.allreduce(std::span<std::int64_t>(v), op);
    EXPECT_EQ(v, start);
  }
}

TEST(LocalCommunicatorTest, AnyIsTheRanksOwnFlag) {
  LocalCommunicator comm;
  EXPECT_TRUE(comm.any(true));
  EXPECT_FALSE(comm.any(false));
}

TEST(LocalCommunicatorTest, BroadcastFromAMissingRootIsConfigError) {
  LocalCommunicator comm;
  std::vector<float> v(3);
  EXPECT_NO_THROW(comm.broadcast(std::span<float>(v), 0));
  EXPECT_THROW(comm.broadcast(std::span<float>(v), 1), ConfigError);
}

}  // namespace
}  // namespace seedloader::ddp
