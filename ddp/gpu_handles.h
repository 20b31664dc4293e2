// CublasHandle and NcclComm: owning handles (base/unique_handle.h) for a cuBLAS
// context and an NCCL communicator (the stream and event handles are in
// base/cuda_handles.h). Only built with CUDA. Not thread-safe.
#pragma once

#include <cublas_v2.h>
#include <nccl.h>

#include "base/unique_handle.h"
#include "ddp/cuda_check.h"

namespace seedloader::ddp::detail {

class CublasHandle
    : public seedloader::detail::UniqueHandle<cublasHandle_t, cublasDestroy> {
 public:
  // Creates a handle (cublasCreate); throws Error naming the call on failure.
  static CublasHandle create() {
    CublasHandle h;
    SL_CHECK_CUBLAS(cublasCreate(h.out()));
    return h;
  }
};

// Destroyed with ncclCommDestroy, which waits for the communicator's queued work;
// after a failure, abort() tears it down without waiting instead.
class NcclComm : public seedloader::detail::UniqueHandle<ncclComm_t, ncclCommDestroy> {
 public:
  // Joins the clique (ncclCommInitRank, which blocks until every rank joins);
  // throws CommError naming the call on failure.
  static NcclComm init_rank(int size, const ncclUniqueId& id, int rank) {
    NcclComm c;
    SL_CHECK_NCCL(ncclCommInitRank(c.out(), size, id, rank));
    return c;
  }
  // Aborts the communicator (ncclCommAbort, status ignored) and leaves this
  // handle empty.
  void abort() noexcept {
    if (get()) ncclCommAbort(release());
  }
};

}  // namespace seedloader::ddp::detail
