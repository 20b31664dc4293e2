// Forward declarations of the CUDA handle types that public headers name
// (cudaStream_t, cudaEvent_t, cublasHandle_t), so code that only passes them
// around needs no CUDA headers. Each alias names the same type as the CUDA
// header's typedef (driver_types.h, cublas_api.h), so both may be included together.
#pragma once

struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;
struct cublasContext;
using cublasHandle_t = cublasContext*;
