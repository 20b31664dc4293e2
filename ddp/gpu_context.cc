#include "ddp/gpu_context.h"

#include "rng/error.h"

#ifdef SEEDLOADER_HAS_CUDA
#include "ddp/cuda_check.h"
#endif

namespace seedloader::ddp {

#ifdef SEEDLOADER_HAS_CUDA

GpuContext::GpuContext() {
  cudaStream_t stream = nullptr;
  // A blocking stream: host-side cudaMemcpy/cudaMemset (legacy default stream)
  // stay ordered with the kernels queued here.
  SL_CHECK_CUDA(cudaStreamCreate(&stream));
  cublasHandle_t handle = nullptr;
  try {
    SL_CHECK_CUBLAS(cublasCreate(&handle));
    SL_CHECK_CUBLAS(cublasSetStream(handle, stream));
  } catch (...) {
    if (handle) cublasDestroy(handle);
    cudaStreamDestroy(stream);
    throw;
  }
  stream_ = stream;
  cublas_ = handle;
}

GpuContext::~GpuContext() {
  if (cublas_) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void GpuContext::synchronize() const {
  SL_CHECK_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

#else

GpuContext::GpuContext() {
  throw ConfigError("GpuContext: seedloader was built without CUDA");
}
GpuContext::~GpuContext() = default;
void GpuContext::synchronize() const {}

#endif

}  // namespace seedloader::ddp
