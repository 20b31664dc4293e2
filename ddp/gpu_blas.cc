// The GPU layer and loss entry points of gpu_kernels.h: cuBLAS for the matrix work
// (row-major data handed to column-major cuBLAS by computing the transposed
// products), the kernels of gpu_kernels.cu for the rest.
#include <cmath>
#include <vector>

#include "ddp/cuda_check.h"
#include "ddp/gpu_kernels.h"
#include "seedloader/ddp/device.h"

namespace seedloader::ddp::gpu {
namespace {

// C[m x n] (column-major) = alpha op(A) op(B) + beta C.
void gemm(const GpuContext& ctx, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
          int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          float beta, float* c, int64_t ldc) {
  const float alpha = 1.0f;
  SL_CHECK_CUBLAS(cublasSgemm(ctx.cublas(), ta, tb, static_cast<int>(m),
                              static_cast<int>(n), static_cast<int>(k), &alpha, a,
                              static_cast<int>(lda), b, static_cast<int>(ldb), &beta, c,
                              static_cast<int>(ldc)));
}

// Sums per-element loss terms on the host (after the stream finishes), in double.
float host_sum(const GpuContext& ctx, const DeviceArray<float>& terms, double divisor) {
  ctx.synchronize();
  double s = 0;
  for (float t : terms.to_host()) s += t;
  return static_cast<float>(s / divisor);
}

}  // namespace

void linear_forward(const GpuContext& ctx, const float* x, const float* w, const float* b,
                    float* y, int64_t n, int64_t in, int64_t out) {
  // Y^T (out x n) = W (as the transpose of its column-major view) * X^T.
  gemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, w, in, x, in, 0.0f, y, out);
  kernels::add_row_bias(ctx.stream(), y, b, n, out);
}

void linear_backward_params(const GpuContext& ctx, const float* x, const float* dy,
                            float* dw, float* db, int64_t n, int64_t in, int64_t out) {
  // dW^T (in x out) += X^T * dY.
  gemm(ctx, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, x, in, dy, out, 1.0f, dw, in);
  kernels::sum_rows_into(ctx.stream(), dy, db, n, out);
}

void linear_backward_input(const GpuContext& ctx, const float* w, const float* dy,
                           float* dx, int64_t n, int64_t in, int64_t out) {
  // dX^T (in x n) = W^T * dY^T.
  gemm(ctx, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, w, in, dy, out, 0.0f, dx, in);
}

void relu_forward(const GpuContext& ctx, const float* x, float* y, int64_t count) {
  kernels::relu_forward(ctx.stream(), x, y, count);
}

void relu_backward(const GpuContext& ctx, const float* x, const float* dy, float* dx,
                   int64_t count) {
  kernels::relu_backward(ctx.stream(), x, dy, dx, count);
}

void conv2d_forward(const GpuContext& ctx, const float* x, const float* w, const float* b,
                    float* y, float* col, int64_t n, const cpu::ConvGeometry& g) {
  const int64_t kk = g.c_in * g.k * g.k, hw = g.h_out() * g.w_out();
  for (int64_t s = 0; s < n; ++s) {
    kernels::im2col(ctx.stream(), x + s * g.c_in * g.h * g.w, col, g);
    // Y_s^T (hw x c_out) = col^T * W^T.
    gemm(ctx, CUBLAS_OP_N, CUBLAS_OP_N, hw, g.c_out, kk, col, hw, w, kk, 0.0f,
         y + s * g.c_out * hw, hw);
  }
  kernels::add_channel_bias(ctx.stream(), y, b, n, g.c_out, hw);
}

void conv2d_backward_params(const GpuContext& ctx, const float* x, const float* dy,
                            float* dw, float* db, float* col, int64_t n,
                            const cpu::ConvGeometry& g) {
  const int64_t kk = g.c_in * g.k * g.k, hw = g.h_out() * g.w_out();
  for (int64_t s = 0; s < n; ++s) {
    kernels::im2col(ctx.stream(), x + s * g.c_in * g.h * g.w, col, g);
    // dW^T (kk x c_out) += col * dY_s^T.
    gemm(ctx, CUBLAS_OP_T, CUBLAS_OP_N, kk, g.c_out, hw, col, hw, dy + s * g.c_out * hw,
         hw, 1.0f, dw, kk);
  }
  kernels::sum_channels_into(ctx.stream(), dy, db, n, g.c_out, hw);
}

void conv2d_backward_input(const GpuContext& ctx, const float* w, const float* dy,
                           float* dx, float* dcol, int64_t n,
                           const cpu::ConvGeometry& g) {
  const int64_t kk = g.c_in * g.k * g.k, hw = g.h_out() * g.w_out();
  for (int64_t s = 0; s < n; ++s) {
    // dcol^T (hw x kk) = dY_s^T * W.
    gemm(ctx, CUBLAS_OP_N, CUBLAS_OP_T, hw, kk, g.c_out, dy + s * g.c_out * hw, hw, w, kk,
         0.0f, dcol, hw);
    kernels::col2im(ctx.stream(), dcol, dx + s * g.c_in * g.h * g.w, g);
  }
}

void maxpool_forward(const GpuContext& ctx, const float* x, float* y, int64_t* argmax,
                     int64_t planes, int64_t h, int64_t w, int64_t k) {
  kernels::maxpool_forward(ctx.stream(), x, y, argmax, planes, h, w, k);
}

void maxpool_backward(const GpuContext& ctx, const float* dy, const int64_t* argmax,
                      float* dx, int64_t out_count, int64_t in_count) {
  kernels::maxpool_backward(ctx.stream(), dy, argmax, dx, out_count, in_count);
}

void copy(const GpuContext& ctx, float* dst, const float* src, int64_t count) {
  SL_CHECK_CUDA(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(count) * sizeof(float),
                                cudaMemcpyDeviceToDevice, ctx.stream()));
}

float mse_loss(const GpuContext& ctx, const float* y, const float* target, float* dy,
               int64_t count) {
  DeviceArray<float> terms(Device::kCuda, static_cast<std::size_t>(count));
  kernels::mse_terms(ctx.stream(), y, target, dy, terms.data(), count);
  return host_sum(ctx, terms, static_cast<double>(count));
}

float cross_entropy_loss(const GpuContext& ctx, const float* logits,
                         const int32_t* labels, float* dlogits, int64_t n,
                         int64_t classes) {
  DeviceArray<float> terms(Device::kCuda, static_cast<std::size_t>(n));
  kernels::cross_entropy_terms(ctx.stream(), logits, labels, dlogits, terms.data(), n,
                               classes);
  const float loss = host_sum(ctx, terms, static_cast<double>(n));
  if (std::isnan(loss))
    throw DataError("cross_entropy_loss: a label is outside [0, " +
                    std::to_string(classes) + ") (or the logits are not finite)");
  return loss;
}

}  // namespace seedloader::ddp::gpu
