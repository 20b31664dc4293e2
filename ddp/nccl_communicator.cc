#include "ddp/nccl_communicator.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "ddp/cuda_check.h"
#include "ddp/mpi_check.h"
#include "rng/error.h"

namespace seedloader::ddp {
namespace {

int local_rank() {
  const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return v ? std::atoi(v) : 0;
}

// One in-flight NCCL collective: its completion event, waited on with the
// communicator's timeout.
class NcclWork final : public Work {
 public:
  NcclWork(NcclCommunicator& comm, cudaEvent_t done, std::string what)
      : comm_(comm), done_(done), what_(std::move(what)) {}
  ~NcclWork() override { cudaEventDestroy(done_); }
  NcclWork(const NcclWork&) = delete;
  NcclWork& operator=(const NcclWork&) = delete;

  bool test() override {
    const cudaError_t rc = cudaEventQuery(done_);
    if (rc == cudaErrorNotReady) return false;
    SL_CHECK_CUDA(rc);
    return true;
  }
  void wait() override { comm_.wait_event(done_, what_); }

 private:
  NcclCommunicator& comm_;
  cudaEvent_t done_;
  std::string what_;
};

}  // namespace

NcclCommunicator::NcclCommunicator(MpiCommunicator& bootstrap, NcclOptions options)
    : options_(options), rank_(bootstrap.rank()), size_(bootstrap.size()) {
  if (options_.timeout.count() <= 0)
    throw ConfigError("NcclOptions.timeout must be positive");
  int count = 0;
  SL_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (count <= 0) throw ConfigError("NcclCommunicator: no CUDA device");
  device_ = local_rank() % count;
  SL_CHECK_CUDA(cudaSetDevice(device_));

  ncclUniqueId id{};
  if (rank_ == 0) SL_CHECK_NCCL(ncclGetUniqueId(&id));
  // The id is an opaque byte blob; a byte broadcast is the honest type here.
  MPI_Request request = MPI_REQUEST_NULL;
  SL_CHECK_MPI(MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, bootstrap.comm(), &request));
  bootstrap.wait_request(request, "broadcast of the NCCL unique id");

  // The destructor does not run when the constructor throws: release by hand.
  try {
    SL_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    SL_CHECK_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    SL_CHECK_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
    scratch_.set_device(Device::kCuda);
    scratch_.resize(1);
  } catch (...) {
    release();
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() { release(); }

void NcclCommunicator::release() noexcept {
  if (comm_) {
    if (aborted_) {
      ncclCommAbort(comm_);
    } else {
      ncclCommDestroy(comm_);
    }
  }
  if (ready_) cudaEventDestroy(ready_);
  if (stream_) cudaStreamDestroy(stream_);
  comm_ = nullptr;
  ready_ = nullptr;
  stream_ = nullptr;
}

void NcclCommunicator::check_usable(const char* what) const {
  if (aborted_)
    throw CommError("rank " + std::to_string(rank_) + ": " + what +
                    " on an aborted NCCL communicator");
}

void NcclCommunicator::follow_compute() {
  SL_CHECK_CUDA(cudaEventRecord(ready_, compute_));
  SL_CHECK_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
}

void NcclCommunicator::abort_with(const std::string& message) {
  aborted_ = true;
  ncclCommAbort(comm_);
  comm_ = nullptr;
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
    SL_CHECK_NCCL(ncclCommGetAsyncError(comm_, &async));
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
                              op == ReduceOp::kAverage ? ncclAvg : ncclSum, comm_,
                              stream_));
  cudaEvent_t done = nullptr;
  SL_CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  auto work = std::make_unique<NcclWork>(
      *this, done, "allreduce of " + std::to_string(data.size()) + " floats");
  SL_CHECK_CUDA(cudaEventRecord(done, stream_));
  return work;
}

void NcclCommunicator::broadcast(std::span<float> data, int root) {
  check_usable("broadcast");
  follow_compute();
  SL_CHECK_NCCL(ncclBroadcast(data.data(), data.data(), data.size(), ncclFloat32, root,
                              comm_, stream_));
  cudaEvent_t done = nullptr;
  SL_CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  NcclWork work(*this, done,
                "broadcast of " + std::to_string(data.size()) + " floats from rank " +
                    std::to_string(root));
  SL_CHECK_CUDA(cudaEventRecord(done, stream_));
  work.wait();
}

void NcclCommunicator::broadcast(std::span<std::int64_t> data, int root) {
  check_usable("broadcast");
  DeviceArray<std::int64_t> staged(Device::kCuda, data.size());
  staged.copy_from_host(data);
  follow_compute();
  SL_CHECK_NCCL(ncclBroadcast(staged.data(), staged.data(), data.size(), ncclInt64, root,
                              comm_, stream_));
  cudaEvent_t done = nullptr;
  SL_CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  NcclWork work(*this, done, "broadcast of " + std::to_string(data.size()) + " int64");
  SL_CHECK_CUDA(cudaEventRecord(done, stream_));
  work.wait();
  auto host = staged.to_host();
  std::copy(host.begin(), host.end(), data.begin());
}

void NcclCommunicator::barrier() {
  // NCCL has no barrier; a one-element all-reduce is one.
  iallreduce(scratch_.span(), ReduceOp::kSum)->wait();
}

}  // namespace seedloader::ddp
