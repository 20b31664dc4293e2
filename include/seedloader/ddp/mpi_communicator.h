// MpiCommunicator: Communicator over MPI_COMM_WORLD (a private duplicate of it) for
// host buffers. Works under `mpirun -np N` on one or many nodes, and as a single
// process without mpirun (MPI singleton). MPI is initialised by the first
// communicator (MPI_Init_thread asking for MPI_THREAD_FUNNELED, checked) and
// finalised when the last one is destroyed, unless the program initialised MPI itself.
//
// Progress: collectives are non-blocking (MPI_Iallreduce, MPI_Ibcast, MPI_Ibarrier)
// and advance only inside MPI calls; progress() calls MPI_Test on every collective in
// flight. The Reducer calls it from the backward hook after each layer, so a bucket's
// reduction advances while the remaining layers compute. We chose this over a
// progress thread because (a) a progress thread needs MPI_THREAD_MULTIPLE, whose
// locking slows every call, (b) a polling thread competes for the same cores as the
// backward pass (two cores here, one per rank), and (c) OpenMPI's shared-memory
// transport only moves data when some thread is inside MPI anyway.
// Blocking waits poll MPI_Test until done or until options.timeout, then throw
// CommError naming the rank and collective. Not thread-safe: one thread (the one that
// created it) makes every call.
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "seedloader/ddp/communicator.h"

namespace seedloader::ddp {

struct MpiOptions {
  // How long a collective may take before the waiting rank gives up.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// Owns MPI's lifetime (init on construction, finalize on destruction when this
// process initialised it, unless an exception is unwinding: MPI_Finalize would wait
// for a dead peer). Shared by every MpiCommunicator.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // The live session, creating it if needed. Throws CommError if MPI was finalised.
  static std::shared_ptr<MpiSession> acquire();

 private:
  bool owns_init_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MpiOptions options = {});
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::kCpu; }
  std::unique_ptr<Work> iallreduce(std::span<float> data, ReduceOp op) override;
  void broadcast(std::span<float> data, int root) override;
  void broadcast(std::span<std::int64_t> data, int root) override;
  void barrier() override;
  void progress() override;

  // This rank's index among the ranks on its node (MPI_COMM_TYPE_SHARED: the ranks
  // that can share memory), 0-based; a GPU rank uses it to pick its device.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  MPI_Comm comm() const { return comm_; }
  const MpiOptions& options() const { return options_; }
  // Polls `request` until it completes; CommError naming `what` after the timeout.
  void wait_request(MPI_Request& request, const std::string& what);

 private:
  friend class MpiWork;

  void allreduce_int64(std::span<std::int64_t> data, IntReduceOp op) override;

  std::shared_ptr<MpiSession> session_;
  MpiOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::vector<MPI_Request*> in_flight_;  // requests progress() should test
};

}  // namespace seedloader::ddp
