#include "seedloader/ddp/nccl_communicator.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "base/cuda_handles.h"
#include "ddp/cuda_check.h"
#include "ddp/gpu_handles.h"
#include "ddp/mpi_check.h"
#include "seedloader/error.h"

namespace seedloader::ddp {

// Events are created once and reused rather than per collective. `ready` orders
// the communication stream after the compute stream; one event is enough, since
// each collective records and waits on it before the next can. Broadcasts and
// integer all-reduces wait before they return, so they share one completion event
// (broadcast_done) too. All-reduces may be in flight several at a time (one per
// Reducer bucket), each Work needing its own completion event: a Work takes one
// from `spare` and gives it back when destroyed, so the pool grows to the most
// collectives ever in flight at once and events are created only then.
// Re-recording a returned event is safe even if its collective was never waited
// on: a record replaces the event's earlier state, and the stream is in order
// anyway.
// Members are destroyed in reverse: the communicator first, the stream last.
struct NcclCommunicator::Impl {
  seedloader::detail::CudaStream stream;
  seedloader::detail::CudaEvent ready;
  seedloader::detail::CudaEvent broadcast_done;
  std::vector<seedloader::detail::CudaEvent> spare;
  detail::NcclComm comm;

  seedloader::detail::CudaEvent take_event() {
    if (spare.empty()) return seedloader::detail::CudaEvent(cudaEventDisableTiming);
    seedloader::detail::CudaEvent e = std::move(spare.back());
    spare.pop_back();
    return e;
  }
};

namespace detail {

// One in-flight NCCL all-reduce: its completion event (from the communicator's
// pool, returned on destruction), waited on with the communicator's timeout.
// REQUIRES: destroyed before the communicator.
class NcclWork final : public Work {
 public:
  NcclWork(NcclCommunicator& comm, seedloader::detail::CudaEvent done, std::string what)
      : comm_(comm), done_(std::move(done)), what_(std::move(what)) {}
  ~NcclWork() override {
    // If the pool cannot grow, done_ is simply destroyed with this Work.
    try {
      comm_.impl_->spare.push_back(std::move(done_));
    } catch (...) {
    }
  }
  NcclWork(const NcclWork&) = delete;
  NcclWork& operator=(const NcclWork&) = delete;

  bool test() override {
    const cudaError_t rc = cudaEventQuery(done_.get());
    if (rc == cudaErrorNotReady) return false;
    SL_CHECK_CUDA(rc);
    return true;
  }
  void wait() override { comm_.wait_event(done_.get(), what_); }
  cudaEvent_t done() const { return done_.get(); }

 private:
  NcclCommunicator& comm_;
  seedloader::detail::CudaEvent done_;
  std::string what_;
};

}  // namespace detail

NcclCommunicator::NcclCommunicator(MpiCommunicator& bootstrap, NcclOptions options)
    : options_(options), rank_(bootstrap.rank()), size_(bootstrap.size()) {
  if (options_.timeout.count() <= 0)
    throw ConfigError("NcclOptions.timeout must be positive");
  int count = 0;
  SL_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (count <= 0) throw ConfigError("NcclCommunicator: no CUDA device");
  device_ = bootstrap.local_rank() % count;
  SL_CHECK_CUDA(cudaSetDevice(device_));

  ncclUniqueId id{};
  if (rank_ == 0) SL_CHECK_NCCL(ncclGetUniqueId(&id));
  // The id is an opaque byte blob; a byte broadcast is the honest type here.
  MPI_Request request = MPI_REQUEST_NULL;
  SL_CHECK_MPI(MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, bootstrap.comm(), &request));
  bootstrap.wait_request(request, "broadcast of the NCCL unique id");

  // If the constructor throws, the members built so far (impl_'s handles,
  // scratch_) release what they own.
  impl_ = std::make_unique<Impl>();
  impl_->stream = seedloader::detail::CudaStream(cudaStreamNonBlocking);
  impl_->ready = seedloader::detail::CudaEvent(cudaEventDisableTiming);
  impl_->broadcast_done = seedloader::detail::CudaEvent(cudaEventDisableTiming);
  impl_->comm = detail::NcclComm::init_rank(size_, id, rank_);
  scratch_.set_device(Device::kCuda);
  scratch_.resize(1);
}

// After abort_with() the communicator is already aborted and impl_->comm empty;
// otherwise ~NcclComm destroys it.
NcclCommunicator::~NcclCommunicator() = default;

void NcclCommunicator::check_usable(const char* what) const {
  if (aborted_)
    throw CommError("rank " + std::to_string(rank_) + ": " + what +
                    " on an aborted NCCL communicator");
}

void NcclCommunicator::follow_compute() {
  SL_CHECK_CUDA(cudaEventRecord(impl_->ready.get(), compute_));
  SL_CHECK_CUDA(cudaStreamWaitEvent(impl_->stream.get(), impl_->ready.get(), 0));
}

void NcclCommunicator::abort_with(const std::string& message) {
  aborted_ = true;
  impl_->comm.abort();
  throw CommError(message);
}

void NcclCommunicator::wait_event(cudaEvent_t done, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  const std::string who =
      "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  for (;;) {
    check_usable(what.c_str());
    const cudaError_t rc = cudaEventQuery(done);
    if (rc == cudaSuccess) break;
    if (rc != cudaErrorNotReady) SL_CHECK_CUDA(rc);
    ncclResult_t async = ncclSuccess;
    SL_CHECK_NCCL(ncclCommGetAsyncError(impl_->comm.get(), &async));
    if (async != ncclSuccess && async != ncclInProgress)
      abort_with(who + ": NCCL " + what + " failed: " + ncclGetErrorString(async));
    if (std::chrono::steady_clock::now() > deadline)
      abort_with(who + ": NCCL " + what + " did not complete within " +
                 std::to_string(options_.timeout.count()) +
                 " ms (a peer rank died or stalled?); communicator aborted");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  // Later compute kernels see the result without a host synchronise.
  SL_CHECK_CUDA(cudaStreamWaitEvent(compute_, done, 0));
}

std::unique_ptr<Work> NcclCommunicator::iallreduce(std::span<float> data, ReduceOp op) {
  check_usable("allreduce");
  follow_compute();
  SL_CHECK_NCCL(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat32,
                              op == ReduceOp::kAverage ? ncclAvg : ncclSum,
                              impl_->comm.get(), impl_->stream.get()));
  auto work = std::make_unique<detail::NcclWork>(
      *this, impl_->take_event(),
      "allreduce of " + std::to_string(data.size()) + " floats");
  SL_CHECK_CUDA(cudaEventRecord(work->done(), impl_->stream.get()));
  return work;
}

void NcclCommunicator::broadcast(std::span<float> data, int root) {
  check_usable("broadcast");
  follow_compute();
  SL_CHECK_NCCL(ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat32, root,
                              impl_->comm.get(), impl_->stream.get()));
  cudaEvent_t done = impl_->broadcast_done.get();
  SL_CHECK_CUDA(cudaEventRecord(done, impl_->stream.get()));
  wait_event(done, "broadcast of " + std::to_string(data.size()) + " floats from rank " +
                       std::to_string(root));
}

void NcclCommunicator::broadcast(std::span<std::int64_t> data, int root) {
  check_usable("broadcast");
  DeviceArray<std::int64_t> staged(Device::kCuda, data.size());
  staged.copy_from_host(data);
  follow_compute();
  SL_CHECK_NCCL(ncclBroadcast(staged.data(), staged.data(), data.size(), ncclInt64, root,
                              impl_->comm.get(), impl_->stream.get()));
  cudaEvent_t done = impl_->broadcast_done.get();
  SL_CHECK_CUDA(cudaEventRecord(done, impl_->stream.get()));
  wait_event(done, "broadcast of " + std::to_string(data.size()) + " int64");
  auto host = staged.to_host();
  std::copy(host.begin(), host.end(), data.begin());
}

void NcclCommunicator::allreduce_int64(std::span<std::int64_t> data, IntReduceOp op) {
  check_usable("allreduce");
  DeviceArray<std::int64_t> staged(Device::kCuda, data.size());
  staged.copy_from_host(data);
  follow_compute();
  const ncclRedOp_t nccl_op = op == IntReduceOp::kSum   ? ncclSum
                              : op == IntReduceOp::kMin ? ncclMin
                                                        : ncclMax;
  SL_CHECK_NCCL(ncclAllReduce(staged.data(), staged.data(), data.size(), ncclInt64,
                              nccl_op, impl_->comm.get(), impl_->stream.get()));
  cudaEvent_t done = impl_->broadcast_done.get();
  SL_CHECK_CUDA(cudaEventRecord(done, impl_->stream.get()));
  wait_event(done, "allreduce of " + std::to_string(data.size()) + " int64");
  auto host = staged.to_host();
  std::copy(host.begin(), host.end(), data.begin());
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier; a one-element all-reduce is one.
  iallreduce(scratch_.span(), ReduceOp::kSum)->wait();
}

}  // namespace seedloader::ddp
