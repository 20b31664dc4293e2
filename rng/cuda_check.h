// SL_CHECK_CUDA: the one checking macro for CUDA runtime calls, in the lowest
// module so the loader (device prefetch) and ddp (models, NCCL) share it. A
// failing call throws seedloader::Error naming the call text, file:line and
// CUDA's error name and string. Only built with CUDA. Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include "rng/error.h"

namespace seedloader::detail {

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file,
                                   int line);

}  // namespace seedloader::detail

#define SL_CHECK_CUDA(call)                                                      \
  do {                                                                           \
    cudaError_t sl_rc_ = (call);                                                 \
    if (sl_rc_ != cudaSuccess)                                                   \
      ::seedloader::detail::throw_cuda_error(sl_rc_, #call, __FILE__, __LINE__); \
  } while (0)
