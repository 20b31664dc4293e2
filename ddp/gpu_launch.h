// Host entry points of the CUDA kernels in gpu_kernels.cu: each launches one kernel
// on `stream` and checks the launch. Kept to C++17 and free of CUDA headers (the
// stream type is forward-declared) so nvcc (whose C++20 dialect this CMake does not
// know) and host code can both include it. Only built with CUDA.
#pragma once

#include <cstdint>

#include "ddp/adamw_math.h"
#include "ddp/conv_geometry.h"
#include "seedloader/cuda_types.h"

namespace seedloader::ddp::gpu {

// Kernels used by the pieces above and by the optimizers.
namespace kernels {
void add_row_bias(cudaStream_t stream, float* y, const float* b, int64_t rows,
                  int64_t cols);
void add_channel_bias(cudaStream_t stream, float* y, const float* b, int64_t n, int64_t c,
                      int64_t hw);
void sum_rows_into(cudaStream_t stream, const float* dy, float* db, int64_t rows,
                   int64_t cols);
void sum_channels_into(cudaStream_t stream, const float* dy, float* db, int64_t n,
                       int64_t c, int64_t hw);
void im2col(cudaStream_t stream, const float* x, float* col, const cpu::ConvGeometry& g);
void col2im(cudaStream_t stream, const float* col, float* dx, const cpu::ConvGeometry& g);
void relu_forward(cudaStream_t stream, const float* x, float* y, int64_t count);
void relu_backward(cudaStream_t stream, const float* x, const float* dy, float* dx,
                   int64_t count);
void maxpool_forward(cudaStream_t stream, const float* x, float* y, int64_t* argmax,
                     int64_t planes, int64_t h, int64_t w, int64_t k);
void maxpool_backward(cudaStream_t stream, const float* dy, const int64_t* argmax,
                      float* dx, int64_t out_count, int64_t in_count);
// Per-element loss terms into `terms`, gradient into dy.
void mse_terms(cudaStream_t stream, const float* y, const float* t, float* dy,
               float* terms, int64_t count);
void cross_entropy_terms(cudaStream_t stream, const float* z, const int32_t* labels,
                         float* dz, float* terms, int64_t n, int64_t classes);
void sgd_step(cudaStream_t stream, float* p, const float* g, float* buf, int64_t count,
              float lr, float momentum, float dampening, float weight_decay,
              bool nesterov, bool first_step);
void adamw_step(cudaStream_t stream, float* p, const float* g, float* m, float* v,
                int64_t count, const AdamWScalars& scalars);
void scale(cudaStream_t stream, float* x, float factor, int64_t count);
}  // namespace kernels

}  // namespace seedloader::ddp::gpu
