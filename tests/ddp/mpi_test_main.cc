// main() for GoogleTest suites run under mpirun: MPI lives for the whole run (MPI
// cannot start twice in one process), and only rank 0 prints the listing while every
// rank's failures still print and fail the job.
#include <gtest/gtest.h>

#include "seedloader/ddp/mpi_communicator.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto session = seedloader::ddp::MpiSession::acquire();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new ::testing::EmptyTestEventListener);
  }
  const int result = RUN_ALL_TESTS();
  // Any rank's failure fails every rank, so mpirun's exit code reflects it.
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}
