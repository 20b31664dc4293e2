// SL_CHECK_NCCL, SL_CHECK_CUBLAS (and, from base/cuda_check.h, SL_CHECK_CUDA): one
// checking macro per GPU library, each a thin wrapper over base/check.h's
// formatter. A failing call throws seedloader::Error (CommError for NCCL) naming
// the call, file:line and the library's error string. Only built with CUDA.
// Thread-safe.
#pragma once

#include <cublas_v2.h>
#include <nccl.h>

#include <string>

#include "base/check.h"
#include "base/cuda_check.h"

namespace seedloader::detail {

[[noreturn]] inline void throw_nccl_error(ncclResult_t code, const char* call,
                                          const char* file, int line) {
  throw_failed_call<CommError>(call, file, line, ncclGetErrorString(code));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t code, const char* call,
                                            const char* file, int line) {
  throw_failed_call(
      call, file, line,
      std::string(cublasGetStatusName(code)) + ": " + cublasGetStatusString(code));
}

}  // namespace seedloader::detail

#define SL_CHECK_NCCL(call) \
  SL_CHECK_RESULT(call, ncclSuccess, ::seedloader::detail::throw_nccl_error)

#define SL_CHECK_CUBLAS(call) \
  SL_CHECK_RESULT(call, CUBLAS_STATUS_SUCCESS, ::seedloader::detail::throw_cublas_error)
