// GPU forward/backward for the layers, losses and optimizers: the float counterparts
// of cpu_kernels.h and optimizer.h's loops, same layouts and the same accumulate /
// overwrite contract. Matrix work is cuBLAS (gpu_blas.cc), the rest small CUDA
// kernels (gpu_kernels.cu). All run asynchronously on ctx.stream(), except the losses,
// which return the loss value to the host. Only built with CUDA.
#pragma once

#include <cstdint>

#include "ddp/cpu_kernels.h"
#include "ddp/gpu_launch.h"
#include "seedloader/ddp/gpu_context.h"

namespace seedloader::ddp::gpu {

void linear_forward(const GpuContext& ctx, const float* x, const float* w, const float* b,
                    float* y, int64_t n, int64_t in, int64_t out);
void linear_backward_params(const GpuContext& ctx, const float* x, const float* dy,
                            float* dw, float* db, int64_t n, int64_t in, int64_t out);
void linear_backward_input(const GpuContext& ctx, const float* w, const float* dy,
                           float* dx, int64_t n, int64_t in, int64_t out);
void relu_forward(const GpuContext& ctx, const float* x, float* y, int64_t count);
void relu_backward(const GpuContext& ctx, const float* x, const float* dy, float* dx,
                   int64_t count);
void conv2d_forward(const GpuContext& ctx, const float* x, const float* w, const float* b,
                    float* y, float* col, int64_t n, const cpu::ConvGeometry& g);
void conv2d_backward_params(const GpuContext& ctx, const float* x, const float* dy,
                            float* dw, float* db, float* col, int64_t n,
                            const cpu::ConvGeometry& g);
void conv2d_backward_input(const GpuContext& ctx, const float* w, const float* dy,
                           float* dx, float* dcol, int64_t n, const cpu::ConvGeometry& g);
void maxpool_forward(const GpuContext& ctx, const float* x, float* y, int64_t* argmax,
                     int64_t planes, int64_t h, int64_t w, int64_t k);
void maxpool_backward(const GpuContext& ctx, const float* dy, const int64_t* argmax,
                      float* dx, int64_t out_count, int64_t in_count);
// Device-to-device copy on the context stream.
void copy(const GpuContext& ctx, float* dst, const float* src, int64_t count);
float mse_loss(const GpuContext& ctx, const float* y, const float* target, float* dy,
               int64_t count);
float cross_entropy_loss(const GpuContext& ctx, const float* logits,
                         const int32_t* labels, float* dlogits, int64_t n,
                         int64_t classes);

}  // namespace seedloader::ddp::gpu
