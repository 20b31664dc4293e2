#include "seedloader/ddp/device.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "seedloader/error.h"

#ifdef SEEDLOADER_HAS_CUDA
#include <cuda_runtime.h>

#include "ddp/cuda_check.h"
#endif

namespace seedloader::ddp {

const char* device_name(Device device) { return device == Device::kCpu ? "cpu" : "cuda"; }

bool cuda_device_available() {
#ifdef SEEDLOADER_HAS_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

namespace detail {
namespace {
[[noreturn]] void no_cuda() {
  throw ConfigError("Device::kCuda requested, but seedloader was built without CUDA");
}
}  // namespace

void* device_alloc(Device device, std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (device == Device::kCpu) {
    // 64-byte aligned for Eigen's vectorised kernels.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
#ifdef SEEDLOADER_HAS_CUDA
  void* p = nullptr;
  SL_CHECK_CUDA(cudaMalloc(&p, bytes));
  return p;
#else
  no_cuda();
#endif
}

void device_free(Device device, void* ptr) noexcept {
  if (device == Device::kCpu) {
    std::free(ptr);
    return;
  }
#ifdef SEEDLOADER_HAS_CUDA
  cudaFree(ptr);
#endif
}

void copy_bytes(Device device, void* dst, const void* src, std::size_t bytes,
                CopyKind kind) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef SEEDLOADER_HAS_CUDA
  cudaMemcpyKind cuda_kind = cudaMemcpyHostToHost;
  switch (kind) {
    case CopyKind::kHostToHost:
      cuda_kind = cudaMemcpyHostToHost;
      break;
    case CopyKind::kHostToDevice:
      cuda_kind = cudaMemcpyHostToDevice;
      break;
    case CopyKind::kDeviceToHost:
      cuda_kind = cudaMemcpyDeviceToHost;
      break;
    case CopyKind::kDeviceToDevice:
      cuda_kind = cudaMemcpyDeviceToDevice;
      break;
  }
  SL_CHECK_CUDA(cudaMemcpy(dst, src, bytes, cuda_kind));
#else
  (void)kind;
  no_cuda();
#endif
}

void zero_bytes(Device device, void* ptr, std::size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memset(ptr, 0, bytes);
    return;
  }
#ifdef SEEDLOADER_HAS_CUDA
  SL_CHECK_CUDA(cudaMemset(ptr, 0, bytes));
#else
  no_cuda();
#endif
}

}  // namespace detail
}  // namespace seedloader::ddp
