// SL_CHECK_CUDA: the checking macro for CUDA runtime calls, shared by the loader
// (device prefetch) and ddp (models, NCCL). A failing call throws seedloader::Error
// naming the call, file:line and CUDA's error name and string (through the one
// formatter in base/check.h). Header-only, so only the targets that include it
// link cudart. Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "base/check.h"

namespace seedloader::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call,
                                          const char* file, int line) {
  throw_failed_call(
      call, file, line,
      std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code));
}

}  // namespace seedloader::detail

#define SL_CHECK_CUDA(call) \
  SL_CHECK_RESULT(call, cudaSuccess, ::seedloader::detail::throw_cuda_error)
