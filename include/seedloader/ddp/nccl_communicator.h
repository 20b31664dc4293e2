// NcclCommunicator: Communicator over NCCL for device buffers, bootstrapped by MPI:
// rank 0's ncclUniqueId reaches the others by MPI broadcast; each rank uses device
// (its node-local rank, MpiCommunicator::local_rank()) % device count, so any MPI
// launcher (mpirun, srun --mpi=pmix, mpiexec.hydra) gives each rank of a node its own
// GPU. Integer all-reduces and broadcasts take host memory and are staged through a
// device buffer. Collectives run on the communicator's
// own stream, ordered after the compute stream with an event (the host never
// synchronises to launch one). Waits poll the completion event and
// ncclCommGetAsyncError; past options.timeout, or on an async error, the
// communicator is aborted (ncclCommAbort) and CommError names the rank and the
// collective; every later call throws. After a wait, the compute stream is ordered
// after the collective, so the next kernels see its result.
// Limitation: ncclCommInitRank itself blocks until every rank joins.
// Owns the NCCL communicator, stream and events (RAII), behind a pimpl so this
// header needs neither NCCL's nor CUDA's headers. Not thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "seedloader/cuda_types.h"
#include "seedloader/ddp/communicator.h"
#include "seedloader/ddp/device.h"
#include "seedloader/ddp/mpi_communicator.h"

namespace seedloader::ddp {

namespace detail {
class NcclWork;
}  // namespace detail

struct NcclOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `bootstrap`'s ranks. Selects and sets this rank's device.
  explicit NcclCommunicator(MpiCommunicator& bootstrap, NcclOptions options = {});
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // The stream whose work each collective must follow (a GpuContext's stream);
  // the legacy default stream until set.
  void set_compute_stream(cudaStream_t stream) { compute_ = stream; }
  int cuda_device() const { return device_; }  // the CUDA device index in use

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::kCuda; }
  std::unique_ptr<Work> iallreduce(std::span<float> data, ReduceOp op) override;
  void broadcast(std::span<float> data, int root) override;
  void broadcast(std::span<std::int64_t> data, int root) override;
  void barrier() override;

  // Blocks until `done` has fired; aborts and throws CommError on timeout or error.
  void wait_event(cudaEvent_t done, const std::string& what);

 private:
  struct Impl;  // the NCCL communicator, stream and events
  friend class detail::NcclWork;

  void allreduce_int64(std::span<std::int64_t> data, IntReduceOp op) override;

  void check_usable(const char* what) const;
  // Orders the communication stream after the compute stream's queued work.
  void follow_compute();
  [[noreturn]] void abort_with(const std::string& message);

  NcclOptions options_;
  int rank_ = 0, size_ = 1, device_ = 0;
  cudaStream_t compute_ = nullptr;
  // Declared before impl_, so it is freed after the communicator is destroyed.
  DeviceArray<float> scratch_;
  std::unique_ptr<Impl> impl_;
  bool aborted_ = false;
};

}  // namespace seedloader::ddp
