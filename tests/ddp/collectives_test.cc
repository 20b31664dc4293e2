// MpiCommunicator collectives with the ranks mpirun gave us: all-reduce (sum and
// average), broadcast from every root, barrier, several non-blocking all-reduces in
// flight, for 0, 1, 10, 1000 and 10^6 elements; expected values from rank and index.
// Integer all-reduces (sum, min, max) and any() with values float and double would
// round.
#include <gtest/gtest.h>

#include <vector>

#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/error.h"

namespace seedloader::ddp {
namespace {

// Small integers, so sums over ranks are exact in float.
float value(int rank, std::size_t i) { return float(rank * 1000 + int(i % 997)); }

float expected_sum(int world, std::size_t i) {
  return float(1000 * world * (world - 1) / 2 + world * int(i % 997));
}

class CollectivesTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  MpiCommunicator comm{MpiOptions{std::chrono::seconds(60)}};
};

TEST_P(CollectivesTest, AllreduceSumsOverRanks) {
  std::vector<float> data(GetParam());
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = value(comm.rank(), i);
  comm.allreduce(data);
  for (std::size_t i = 0; i < data.size(); ++i)
    ASSERT_EQ(data[i], expected_sum(comm.size(), i)) << "index " << i;
}

TEST_P(CollectivesTest, AllreduceAverageDividesByWorldSize) {
  std::vector<float> data(GetParam());
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = value(comm.rank(), i);
  comm.allreduce_average(data);
  const float scale = 1.0f / float(comm.size());
  for (std::size_t i = 0; i < data.size(); ++i)
    ASSERT_FLOAT_EQ(data[i], expected_sum(comm.size(), i) * scale) << "index " << i;
}

TEST_P(CollectivesTest, BroadcastCopiesEveryRootsData) {
  for (int root = 0; root < comm.size(); ++root) {
    std::vector<float> data(GetParam(), -1.0f);
    if (comm.rank() == root)
      for (std::size_t i = 0; i < data.size(); ++i) data[i] = value(root, i);
    comm.broadcast(data, root);
    for (std::size_t i = 0; i < data.size(); ++i)
      ASSERT_EQ(data[i], value(root, i)) << "root " << root << " index " << i;
  }
}

TEST_P(CollectivesTest, ManyNonBlockingAllreducesCompleteInAnyWaitOrder) {
  std::vector<std::vector<float>> buffers(4, std::vector<float>(GetParam()));
  std::vector<std::unique_ptr<Work>> work;
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    for (std::size_t i = 0; i < buffers[b].size(); ++i)
      buffers[b][i] = value(comm.rank(), i + b);
    work.push_back(comm.iallreduce(buffers[b], ReduceOp::kSum));
    comm.progress();
  }
  for (std::size_t b = buffers.size(); b-- > 0;) work[b]->wait();
  for (std::size_t b = 0; b < buffers.size(); ++b)
    for (std::size_t i = 0; i < buffers[b].size(); ++i)
      ASSERT_EQ(buffers[b][i], expected_sum(comm.size(), i + b)) << "buffer " << b;
}

INSTANTIATE_TEST_SUITE_P(Sizes, CollectivesTest,
                         ::testing::Values(0, 1, 10, 1000, 1000000));

TEST(CommunicatorTest, Int64BroadcastAndBarrierWork) {
  MpiCommunicator comm;
  std::vector<std::int64_t> v(3, comm.rank() == 0 ? (std::int64_t{1} << 40) : 0);
  comm.broadcast(std::span<std::int64_t>(v), 0);
  for (auto x : v) EXPECT_EQ(x, std::int64_t{1} << 40);
  comm.barrier();
  EXPECT_GE(comm.rank(), 0);
  EXPECT_LT(comm.rank(), comm.size());
}

// 2^53 + rank: a double cannot tell neighbours apart there, float not even 2^24 + 1.
std::int64_t big(int rank, std::size_t i) {
  return (std::int64_t{1} << 53) + rank + static_cast<std::int64_t>(i);
}

class IntCollectivesTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  MpiCommunicator comm{MpiOptions{std::chrono::seconds(60)}};
};

TEST_P(IntCollectivesTest, Int64SumIsExactAboveTwoToThe53) {
  std::vector<std::int64_t> v(GetParam());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = big(comm.rank(), i);
  comm.allreduce(std::span<std::int64_t>(v), IntReduceOp::kSum);
  const std::int64_t w = comm.size();
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(v[i], w * big(0, i) + w * (w - 1) / 2) << "index " << i;
}

TEST_P(IntCollectivesTest, Int64MinAndMaxPickTheExtremeRanks) {
  std::vector<std::int64_t> lo(GetParam()), hi(GetParam());
  for (std::size_t i = 0; i < lo.size(); ++i) lo[i] = hi[i] = big(comm.rank(), i);
  comm.allreduce(std::span<std::int64_t>(lo), IntReduceOp::kMin);
  comm.allreduce(std::span<std::int64_t>(hi), IntReduceOp::kMax);
  for (std::size_t i = 0; i < lo.size(); ++i) {
    ASSERT_EQ(lo[i], big(0, i)) << "index " << i;
    ASSERT_EQ(hi[i], big(comm.size() - 1, i)) << "index " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, IntCollectivesTest, ::testing::Values(0, 1, 10, 1000));

// A count just above 2^24 on every rank: the float all-reduce this replaces
// rounded 16777217 to 16777216 before it even left the rank.
TEST(CommunicatorTest, SampleCountAboveTwoToThe24SumsExactly) {
  MpiCommunicator comm;
  std::int64_t n = (std::int64_t{1} << 24) + 1;
  comm.allreduce(std::span<std::int64_t>(&n, 1), IntReduceOp::kSum);
  EXPECT_EQ(n, ((std::int64_t{1} << 24) + 1) * comm.size());
}

TEST(CommunicatorTest, AnyIsTrueOnEveryRankWhenOneRankSaysSo) {
  MpiCommunicator comm;
  EXPECT_FALSE(comm.any(false));
  EXPECT_TRUE(comm.any(true));
  for (int r = 0; r < comm.size(); ++r)
    EXPECT_TRUE(comm.any(comm.rank() == r)) << "only rank " << r << " set it";
}

// Every rank of `mpirun -np N` on this machine shares one node, so its node-local
// rank (MPI_COMM_TYPE_SHARED) is its world rank.
TEST(CommunicatorTest, LocalRankOnOneNodeIsTheWorldRank) {
  MpiCommunicator comm;
  EXPECT_EQ(comm.local_rank(), comm.rank());
  EXPECT_EQ(comm.local_size(), comm.size());
}

TEST(CommunicatorTest, NonPositiveTimeoutIsConfigError) {
  EXPECT_THROW(MpiCommunicator(MpiOptions{std::chrono::milliseconds(0)}), ConfigError);
}

}  // namespace
}  // namespace seedloader::ddp
