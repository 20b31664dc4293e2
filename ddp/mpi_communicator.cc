#include "seedloader/ddp/mpi_communicator.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "ddp/mpi_check.h"
#include "seedloader/error.h"

namespace seedloader::ddp {
namespace {

std::mutex g_session_mutex;
std::weak_ptr<MpiSession> g_session;

int checked_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw ConfigError(std::string(what) + ": " + std::to_string(n) +
                      " elements exceed MPI's int count");
  return static_cast<int>(n);
}

}  // namespace

MpiSession::MpiSession() {
  int initialized = 0, finalized = 0;
  SL_CHECK_MPI(MPI_Initialized(&initialized));
  SL_CHECK_MPI(MPI_Finalized(&finalized));
  if (finalized) throw CommError("MPI was already finalized; it cannot start again");
  if (!initialized) {
    int provided = 0;
    SL_CHECK_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    owns_init_ = true;
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      throw CommError("MPI_Init_thread provided thread level " +
                      std::to_string(provided) +
                      ", below the MPI_THREAD_FUNNELED this communicator needs");
    }
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // MPI_Finalize is collective: while an exception (say a CommError because a peer
  // died) unwinds, it would wait for that peer forever. Leave MPI up so the handler
  // can report and MPI_Abort.
  if (owns_init_ && !finalized && std::uncaught_exceptions() == 0) MPI_Finalize();
}

std::shared_ptr<MpiSession> MpiSession::acquire() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  auto session = g_session.lock();
  if (!session) {
    session = std::make_shared<MpiSession>();
    g_session = session;
  }
  return session;
}

// One non-blocking collective: the request, what it is for error messages, and the
// average's scale applied once it completes.
class MpiWork final : public Work {
 public:
  MpiWork(MpiCommunicator& comm, std::span<float> data, ReduceOp op)
      : comm_(comm), data_(data), op_(op) {
    what_ = "allreduce of " + std::to_string(data.size()) + " floats";
    int n = checked_count(data.size(), "allreduce");
    SL_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, data.data(), n, MPI_FLOAT, MPI_SUM,
                                comm.comm(), &request_));
    comm_.in_flight_.push_back(&request_);
  }
  // A collective abandoned on an error path can be neither cancelled nor freed (MPI
  // forbids MPI_Request_free on an active collective); its handle is left to
  // MPI_Abort or MPI_Finalize, which the caller is heading for.
  ~MpiWork() override { forget(); }
  MpiWork(const MpiWork&) = delete;
  MpiWork& operator=(const MpiWork&) = delete;

  bool test() override {
    if (request_ != MPI_REQUEST_NULL) {
      int done = 0;
      SL_CHECK_MPI(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
      if (!done) return false;
    }
    finish();
    return true;
  }

  void wait() override {
    comm_.wait_request(request_, what_);
    finish();
  }

 private:
  void forget() {
    auto& v = comm_.in_flight_;
    v.erase(std::remove(v.begin(), v.end(), &request_), v.end());
  }
  void finish() {
    if (finished_) return;
    finished_ = true;
    forget();
    if (op_ == ReduceOp::kAverage && comm_.size() > 1) {
      const float scale = 1.0f / static_cast<float>(comm_.size());
      for (float& x : data_) x *= scale;
    }
  }

  MpiCommunicator& comm_;
  std::span<float> data_;
  ReduceOp op_;
  std::string what_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool finished_ = false;
};

MpiCommunicator::MpiCommunicator(MpiOptions options)
    : session_(MpiSession::acquire()), options_(options) {
  if (options_.timeout.count() <= 0)
    throw ConfigError("MpiOptions.timeout must be positive");
  SL_CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  // Errors come back as codes so SL_CHECK_MPI can turn them into exceptions.
  SL_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  SL_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  SL_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  // The node-local rank comes from MPI itself, not a launcher's variable
  // (OMPI_COMM_WORLD_LOCAL_RANK is OpenMPI's alone; srun and MPICH set others).
  // The split is collective over the world, like the duplicate above.
  struct NodeComm {  // freed even when a check below throws
    MPI_Comm comm = MPI_COMM_NULL;
    ~NodeComm() {
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
  } node;
  SL_CHECK_MPI(
      MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node.comm));
  SL_CHECK_MPI(MPI_Comm_rank(node.comm, &local_rank_));
  SL_CHECK_MPI(MPI_Comm_size(node.comm, &local_size_));
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<Work> MpiCommunicator::iallreduce(std::span<float> data, ReduceOp op) {
  return std::make_unique<MpiWork>(*this, data, op);
}

void MpiCommunicator::wait_request(MPI_Request& request, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (int spins = 0;; ++spins) {
    int done = 0;
    if (request == MPI_REQUEST_NULL) return;
    SL_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw CommError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                      ": " + what + " did not complete within " +
                      std::to_string(options_.timeout.count()) +
                      " ms (a peer rank died or stalled?)");
    }
    // Yield first (low latency), then sleep briefly so an oversubscribed peer on
    // the same core gets to run.
    if (spins < 2000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

void MpiCommunicator::allreduce_int64(std::span<std::int64_t> data, IntReduceOp op) {
  const MPI_Op mpi_op = op == IntReduceOp::kSum   ? MPI_SUM
                        : op == IntReduceOp::kMin ? MPI_MIN
                                                  : MPI_MAX;
  MPI_Request request = MPI_REQUEST_NULL;
  SL_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, data.data(),
                              checked_count(data.size(), "allreduce"), MPI_INT64_T,
                              mpi_op, comm_, &request));
  wait_request(request, "allreduce of " + std::to_string(data.size()) + " int64");
}

void MpiCommunicator::broadcast(std::span<float> data, int root) {
  MPI_Request request = MPI_REQUEST_NULL;
  SL_CHECK_MPI(MPI_Ibcast(data.data(), checked_count(data.size(), "broadcast"), MPI_FLOAT,
                          root, comm_, &request));
  wait_request(request, "broadcast of " + std::to_string(data.size()) +
                            " floats from rank " + std::to_string(root));
}

void MpiCommunicator::broadcast(std::span<std::int64_t> data, int root) {
  MPI_Request request = MPI_REQUEST_NULL;
  SL_CHECK_MPI(MPI_Ibcast(data.data(), checked_count(data.size(), "broadcast"),
                          MPI_INT64_T, root, comm_, &request));
  wait_request(request, "broadcast of " + std::to_string(data.size()) +
                            " int64 from rank " + std::to_string(root));
}

void MpiCommunicator::barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  SL_CHECK_MPI(MPI_Ibarrier(comm_, &request));
  wait_request(request, "barrier");
}

void MpiCommunicator::progress() {
  for (MPI_Request* request : in_flight_) {
    int done = 0;
    if (*request != MPI_REQUEST_NULL)
      SL_CHECK_MPI(MPI_Test(request, &done, MPI_STATUS_IGNORE));
  }
}

}  // namespace seedloader::ddp
