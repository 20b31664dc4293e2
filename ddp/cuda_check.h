// SL_CHECK_NCCL, SL_CHECK_CUBLAS (and, from rng/cuda_check.h, SL_CHECK_CUDA): one
// checking macro per GPU library. A failing call throws seedloader::Error
// (CommError for NCCL) naming the call text, file:line and the library's error
// string. Only built with CUDA. Thread-safe.
#pragma once

#include <cublas_v2.h>
#include <nccl.h>

#include "rng/cuda_check.h"
#include "rng/error.h"

namespace seedloader::detail {

[[noreturn]] void throw_nccl_error(ncclResult_t code, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t code, const char* call,
                                     const char* file, int line);

}  // namespace seedloader::detail

#define SL_CHECK_NCCL(call)                                                      \
  do {                                                                           \
    ncclResult_t sl_rc_ = (call);                                                \
    if (sl_rc_ != ncclSuccess)                                                   \
      ::seedloader::detail::throw_nccl_error(sl_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define SL_CHECK_CUBLAS(call)                                                      \
  do {                                                                             \
    cublasStatus_t sl_rc_ = (call);                                                \
    if (sl_rc_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::seedloader::detail::throw_cublas_error(sl_rc_, #call, __FILE__, __LINE__); \
  } while (0)
