// GpuContext: the compute stream and cuBLAS handle a model runs on (RAII: destroyed
// with the context). The CUDA handle types are only forward-declared, so host-only
// code can hold one without CUDA headers. Built without CUDA, construction throws
// ConfigError. Not thread-safe.
#pragma once

#include <memory>

#include "seedloader/cuda_types.h"
#include "seedloader/ddp/device.h"

namespace seedloader::ddp {

class GpuContext {
 public:
  GpuContext();
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  cudaStream_t stream() const;
  cublasHandle_t cublas() const;  // bound to stream()
  // Blocks the host until the stream's work is done.
  void synchronize() const;

 private:
  struct Impl;  // the owning handles; needs the CUDA headers
  std::unique_ptr<Impl> impl_;
};

// Where a layer runs. `gpu` is set iff device == Device::kCuda.
struct ExecContext {
  Device device = Device::kCpu;
  GpuContext* gpu = nullptr;
  bool on_gpu() const { return device == Device::kCuda; }
};

}  // namespace seedloader::ddp

// SL_GPU_DISPATCH(ctx, stmt): runs `stmt` and returns when ctx is on the GPU. Compiles
// to nothing without CUDA (no GpuContext can exist there).
#ifdef SEEDLOADER_HAS_CUDA
#define SL_GPU_DISPATCH(ctx, stmt) \
  if ((ctx).on_gpu()) {            \
    stmt;                          \
    return;                        \
  }
// SL_GPU_RETURN(ctx, expr): returns `expr` when ctx is on the GPU.
#define SL_GPU_RETURN(ctx, expr) \
  if ((ctx).on_gpu()) return expr;
#else
#define SL_GPU_DISPATCH(ctx, stmt)
#define SL_GPU_RETURN(ctx, expr)
#endif
