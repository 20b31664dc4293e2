// CudaStream and CudaEvent: owning handles (base/unique_handle.h) for a CUDA stream
// and event, shared by the loader (device prefetch) and ddp (GpuContext,
// NcclCommunicator). Header-only, so only the CUDA-built sources that include it
// link cudart (base itself does not). Not thread-safe.
#pragma once

#include <cuda_runtime.h>

#include "base/cuda_check.h"
#include "base/unique_handle.h"

namespace seedloader::detail {

class CudaStream : public UniqueHandle<cudaStream_t, cudaStreamDestroy> {
 public:
  CudaStream() = default;
  // Throws Error naming the call when creation fails. `flags` as for
  // cudaStreamCreateWithFlags (cudaStreamDefault is what cudaStreamCreate does).
  explicit CudaStream(unsigned int flags) {
    SL_CHECK_CUDA(cudaStreamCreateWithFlags(out(), flags));
  }
};

class CudaEvent : public UniqueHandle<cudaEvent_t, cudaEventDestroy> {
 public:
  CudaEvent() = default;
  // Throws Error naming the call when creation fails. `flags` as for
  // cudaEventCreateWithFlags.
  explicit CudaEvent(unsigned int flags) {
    SL_CHECK_CUDA(cudaEventCreateWithFlags(out(), flags));
  }
};

}  // namespace seedloader::detail
