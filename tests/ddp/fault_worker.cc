// A DDP training loop that breaks on purpose, run under mpirun by fault_test.cc.
//   fault_worker kill   rank 1 SIGKILLs itself in the middle of step 3's backward
//   fault_worker stall  rank 1 stops making progress at step 3 (sleeps)
// Surviving ranks must not hang: a CommError after the communicator's timeout
// (2 s here) is printed and the job aborted; mpirun also tears the job down when a
// rank dies. Exit codes: 0 all steps done, 3 CommError, 4 other error.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/mpi_communicator.h"
#include "seedloader/ddp/optimizer.h"
#include "seedloader/ddp/reducer.h"
#include "seedloader/error.h"
#include "tests/ddp/test_models.h"

namespace {

using namespace seedloader;
using namespace seedloader::ddp;

// Breaks rank 1 after a few gradients of step 3 are ready, i.e. mid-backward, with
// some buckets already in flight on the other ranks.
class Saboteur final : public BackwardObserver {
 public:
  Saboteur(BackwardObserver& inner, int rank, bool kill)
      : inner_(inner), rank_(rank), kill_(kill) {}
  void on_backward_begin() override {
    ++step_;
    inner_.on_backward_begin();
  }
  void on_grad_ready(std::size_t index) override {
    inner_.on_grad_ready(index);
    if (rank_ == 1 && step_ == 3 && ++grads_ == 2) {
      std::fprintf(stderr, "fault_worker: rank 1 %s mid-backward\n",
                   kill_ ? "killing itself" : "stalling");
      if (kill_) raise(SIGKILL);
      std::this_thread::sleep_for(std::chrono::minutes(10));
    }
  }
  void on_backward_end() override { inner_.on_backward_end(); }

 private:
  BackwardObserver& inner_;
  int rank_;
  bool kill_;
  int step_ = 0;
  int grads_ = 0;
};

int run(bool kill) {
  MpiCommunicator comm(MpiOptions{std::chrono::milliseconds(2000)});
  auto model = testing_models::mlp(7);
  Reducer reducer(*model, comm, ReducerOptions{4, 64});
  Saboteur saboteur(reducer, comm.rank(), kill);
  model->set_observer(&saboteur);
  Sgd sgd(*model, SgdOptions{0.01f});
  for (int step = 0; step < 6; ++step) {
    auto batch = testing_models::make_batch(false, 4, step);
    model->zero_grad();
    const float* y = model->forward(batch.x.data(), batch.x_shape);
    std::vector<float> dy(16);
    mse_loss(model->context(), y, batch.y.data(), dy.data(), 16);
    model->backward(dy.data());
    sgd.step();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "kill") && std::strcmp(argv[1], "stall"))) {
    std::fprintf(stderr, "usage: fault_worker kill|stall\n");
    return 2;
  }
  // Held here so MPI is still up when the handlers below call MPI_Abort.
  auto session = MpiSession::acquire();
  try {
    return run(std::strcmp(argv[1], "kill") == 0);
  } catch (const CommError& e) {
    std::fprintf(stderr, "fault_worker: CommError: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_worker: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 4);
    return 4;
  }
}
