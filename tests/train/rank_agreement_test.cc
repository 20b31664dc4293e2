// check_ranks_agree and fail_together under mpirun with the ranks it gave us:
// equal facts pass; a fact that differs on one rank, or a step that fails on one
// rank, makes every rank throw, naming that rank and the values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "seedloader/ddp/local_communicator.h"
#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/error.h"
#include "tools/ddp_train/rank_agreement.h"

namespace seedloader::train {
namespace {

class RankAgreementTest : public ::testing::Test {
 protected:
  std::vector<RankFact> facts(const std::string& size) const {
    return {{"data set size", size}, {"seed", "7"}, {"option lr", "0.5"}};
  }
  // The DataError's message, or "" when it returned.
  std::string agree(const std::vector<RankFact>& f) {
    try {
      check_ranks_agree(comm, f);
      return "";
    } catch (const DataError& e) {
      return e.what();
    }
  }
  int last() const { return comm.size() - 1; }

  ddp::MpiCommunicator comm;
};

TEST_F(RankAgreementTest, EqualFactsPass) { EXPECT_EQ(agree(facts("256 samples")), ""); }

TEST_F(RankAgreementTest, LastRanksDifferenceIsNamedOnEveryRank) {
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::string m =
      agree(facts(comm.rank() == last() ? "200 samples" : "256 samples"));
  EXPECT_NE(m.find("ranks disagree on the data set size: rank " + std::to_string(last()) +
                   " has 200 samples, rank 0 has 256 samples"),
            std::string::npos)
      << m;
}

// Several ranks and several facts differ: the first fact in list order, and the
// lowest rank that differs from rank 0, are the ones named.
TEST_F(RankAgreementTest, FirstDifferingFactAndLowestRankAreNamed) {
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<RankFact> f = facts("256 samples");
  if (comm.rank() > 0) {
    f[1].value = "seed of rank " + std::to_string(comm.rank());
    f[2].value = "0.25";
  }
  const std::string m = agree(f);
  EXPECT_NE(m.find("on the seed: rank 1 has seed of rank 1, rank 0 has 7"),
            std::string::npos)
      << m;
}

TEST_F(RankAgreementTest, DifferentFactCountsAreADataErrorOnEveryRank) {
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  std::vector<RankFact> f = facts("256 samples");
  if (comm.rank() == last()) f.push_back({"extra", "1"});
  const std::string m = agree(f);
  EXPECT_NE(m.find("between 3 and 4 facts"), std::string::npos) << m;
}

TEST_F(RankAgreementTest, StepFailingOnOneRankStopsEveryRank) {
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  try {
    fail_together(comm, [&] {
      if (comm.rank() == last()) throw ConfigError("no such file on this node");
    });
    ADD_FAILURE() << "rank " << comm.rank() << " went on";
  } catch (const ConfigError& e) {
    EXPECT_EQ(comm.rank(), last());
    EXPECT_STREQ(e.what(), "no such file on this node");
  } catch (const DataError& e) {
    EXPECT_NE(comm.rank(), last());
    EXPECT_EQ(std::string(e.what()),
              "rank " + std::to_string(last()) + " stopped: no such file on this node");
  }
  // The communicator is still in step: a collective after the failure pairs up.
  comm.barrier();
}

TEST_F(RankAgreementTest, StepThatSucceedsEverywhereReturns) {
  int ran = 0;
  fail_together(comm, [&] { ++ran; });
  EXPECT_EQ(ran, 1);
}

TEST(RankAgreementLocalTest, WorldOfOneAlwaysAgreesAndRethrowsItsOwnError) {
  ddp::LocalCommunicator comm;
  EXPECT_NO_THROW(check_ranks_agree(comm, std::vector<RankFact>{{"seed", "1"}}));
  EXPECT_THROW(fail_together(comm, [] { throw DataError("bad"); }), DataError);
}

}  // namespace
}  // namespace seedloader::train
