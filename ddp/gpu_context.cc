#include "seedloader/ddp/gpu_context.h"

#include "seedloader/error.h"

#ifdef SEEDLOADER_HAS_CUDA
#include "base/cuda_handles.h"
#include "ddp/cuda_check.h"
#include "ddp/gpu_handles.h"
#endif

namespace seedloader::ddp {

#ifdef SEEDLOADER_HAS_CUDA

// Declared in this order so the cuBLAS handle is destroyed before its stream.
struct GpuContext::Impl {
  seedloader::detail::CudaStream stream;
  detail::CublasHandle cublas;
};

GpuContext::GpuContext() : impl_(std::make_unique<Impl>()) {
  // A blocking stream (cudaStreamDefault, as cudaStreamCreate makes): host-side
  // cudaMemcpy/cudaMemset (legacy default stream) stay ordered with the kernels
  // queued here.
  impl_->stream = seedloader::detail::CudaStream(cudaStreamDefault);
  impl_->cublas = detail::CublasHandle::create();
  SL_CHECK_CUBLAS(cublasSetStream(impl_->cublas.get(), impl_->stream.get()));
}

GpuContext::~GpuContext() = default;

cudaStream_t GpuContext::stream() const { return impl_->stream.get(); }
cublasHandle_t GpuContext::cublas() const { return impl_->cublas.get(); }

void GpuContext::synchronize() const {
  SL_CHECK_CUDA(cudaStreamSynchronize(impl_->stream.get()));
}

#else

struct GpuContext::Impl {};

GpuContext::GpuContext() {
  throw ConfigError("GpuContext: seedloader was built without CUDA");
}
GpuContext::~GpuContext() = default;
cudaStream_t GpuContext::stream() const { return nullptr; }
cublasHandle_t GpuContext::cublas() const { return nullptr; }
void GpuContext::synchronize() const {}

#endif

}  // namespace seedloader::ddp
