// The small CUDA kernels behind gpu_launch.h: element-wise layer math, im2col /
// col2im, pooling, per-element loss terms and the optimizer updates. Grid-stride
// loops, one launch each, on the caller's stream; launch errors are checked.
#include "ddp/cuda_check.h"
#include "ddp/gpu_launch.h"

namespace seedloader::ddp::gpu::kernels {
namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

#define SL_GRID_LOOP(i, n)                                                  \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

#define SL_LAUNCH(kernel, n, stream, ...)                          \
  do {                                                             \
    if ((n) > 0) {                                                 \
      kernel<<<blocks_for(n), kThreads, 0, stream>>>(__VA_ARGS__); \
      SL_CHECK_CUDA(cudaGetLastError());                           \
    }                                                              \
  } while (0)

__global__ void add_row_bias_k(float* y, const float* b, int64_t n, int64_t cols) {
  SL_GRID_LOOP(i, n) y[i] += b[i % cols];
}
__global__ void add_channel_bias_k(float* y, const float* b, int64_t n, int64_t c,
                                   int64_t hw) {
  SL_GRID_LOOP(i, n) y[i] += b[(i / hw) % c];
}
__global__ void sum_rows_k(const float* dy, float* db, int64_t rows, int64_t cols) {
  SL_GRID_LOOP(c, cols) {
    float s = 0.f;
    for (int64_t r = 0; r < rows; ++r) s += dy[r * cols + c];
    db[c] += s;
  }
}
__global__ void sum_channels_k(const float* dy, float* db, int64_t n, int64_t c,
                               int64_t hw) {
  SL_GRID_LOOP(ch, c) {
    float s = 0.f;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < hw; ++p) s += dy[(i * c + ch) * hw + p];
    db[ch] += s;
  }
}
// ho, wo come from the host: ConvGeometry's helpers are host functions.
__global__ void im2col_k(const float* x, float* col, cpu::ConvGeometry g, int64_t ho,
                         int64_t wo, int64_t total) {
  SL_GRID_LOOP(idx, total) {
    const int64_t ow = idx % wo, oh = (idx / wo) % ho, row = idx / (wo * ho);
    const int64_t j = row % g.k, i = (row / g.k) % g.k, c = row / (g.k * g.k);
    const int64_t ih = oh * g.stride + i - g.pad, iw = ow * g.stride + j - g.pad;
    col[idx] =
        (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) ? x[(c * g.h + ih) * g.w + iw] : 0.f;
  }
}
__global__ void col2im_k(const float* col, float* dx, cpu::ConvGeometry g, int64_t ho,
                         int64_t wo, int64_t total) {
  SL_GRID_LOOP(idx, total) {
    const int64_t iw = idx % g.w, ih = (idx / g.w) % g.h, c = idx / (g.w * g.h);
    float s = 0.f;
    for (int64_t i = 0; i < g.k; ++i) {
      const int64_t th = ih + g.pad - i;
      if (th < 0 || th % g.stride || th / g.stride >= ho) continue;
      for (int64_t j = 0; j < g.k; ++j) {
        const int64_t tw = iw + g.pad - j;
        if (tw < 0 || tw % g.stride || tw / g.stride >= wo) continue;
        s += col[((c * g.k + i) * g.k + j) * ho * wo + (th / g.stride) * wo +
                 tw / g.stride];
      }
    }
    dx[idx] = s;
  }
}
__global__ void relu_fwd_k(const float* x, float* y, int64_t n) {
  SL_GRID_LOOP(i, n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
__global__ void relu_bwd_k(const float* x, const float* dy, float* dx, int64_t n) {
  SL_GRID_LOOP(i, n) dx[i] = x[i] > 0.f ? dy[i] : 0.f;
}
__global__ void maxpool_fwd_k(const float* x, float* y, int64_t* argmax, int64_t total,
                              int64_t h, int64_t w, int64_t k) {
  const int64_t ho = h / k, wo = w / k;
  SL_GRID_LOOP(o, total) {
    const int64_t ow = o % wo, oh = (o / wo) % ho, p = o / (wo * ho);
    int64_t best = p * h * w + oh * k * w + ow * k;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) {
        const int64_t idx = p * h * w + (oh * k + i) * w + ow * k + j;
        if (x[idx] > x[best]) best = idx;
      }
    y[o] = x[best];
    argmax[o] = best;
  }
}
__global__ void maxpool_bwd_k(const float* dy, const int64_t* argmax, float* dx,
                              int64_t total) {
  SL_GRID_LOOP(o, total) atomicAdd(&dx[argmax[o]], dy[o]);
}
__global__ void mse_k(const float* y, const float* t, float* dy, float* terms,
                      int64_t n) {
  SL_GRID_LOOP(i, n) {
    const float d = y[i] - t[i];
    terms[i] = d * d;
    dy[i] = 2.f * d / float(n);
  }
}
__global__ void ce_k(const float* z, const int32_t* labels, float* dz, float* terms,
                     int64_t n, int64_t classes) {
  SL_GRID_LOOP(s, n) {
    const float* zs = z + s * classes;
    float m = zs[0];
    for (int64_t c = 1; c < classes; ++c) m = fmaxf(m, zs[c]);
    float sum = 0.f;
    for (int64_t c = 0; c < classes; ++c) sum += expf(zs[c] - m);
    const float log_sum = logf(sum) + m;
    const int32_t label = labels[s];
    const bool valid = label >= 0 && label < classes;
    terms[s] = valid ? log_sum - zs[label] : nanf("");
    for (int64_t c = 0; c < classes; ++c)
      dz[s * classes + c] = (expf(zs[c] - log_sum) - (c == label ? 1.f : 0.f)) / float(n);
  }
}
__global__ void sgd_k(float* p, const float* g, float* buf, int64_t n, float lr,
                      float mom, float damp, float wd, bool nesterov, bool first) {
  SL_GRID_LOOP(i, n) {
    float d = g[i];
    if (wd != 0.f) d += wd * p[i];
    if (mom != 0.f) {
      buf[i] = first ? d : mom * buf[i] + (1.f - damp) * d;
      d = nesterov ? d + mom * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}
__global__ void adamw_k(float* p, const float* g, float* m, float* v, int64_t n,
                        AdamWScalars s) {
  SL_GRID_LOOP(i, n) adamw_update(p[i], g[i], m[i], v[i], s);
}
__global__ void scale_k(float* x, float f, int64_t n) { SL_GRID_LOOP(i, n) x[i] *= f; }

}  // namespace

void add_row_bias(cudaStream_t s, float* y, const float* b, int64_t rows, int64_t cols) {
  SL_LAUNCH(add_row_bias_k, rows * cols, s, y, b, rows * cols, cols);
}
void add_channel_bias(cudaStream_t s, float* y, const float* b, int64_t n, int64_t c,
                      int64_t hw) {
  SL_LAUNCH(add_channel_bias_k, n * c * hw, s, y, b, n * c * hw, c, hw);
}
void sum_rows_into(cudaStream_t s, const float* dy, float* db, int64_t rows,
                   int64_t cols) {
  SL_LAUNCH(sum_rows_k, cols, s, dy, db, rows, cols);
}
void sum_channels_into(cudaStream_t s, const float* dy, float* db, int64_t n, int64_t c,
                       int64_t hw) {
  SL_LAUNCH(sum_channels_k, c, s, dy, db, n, c, hw);
}
void im2col(cudaStream_t s, const float* x, float* col, const cpu::ConvGeometry& g) {
  const int64_t total = g.c_in * g.k * g.k * g.h_out() * g.w_out();
  SL_LAUNCH(im2col_k, total, s, x, col, g, g.h_out(), g.w_out(), total);
}
void col2im(cudaStream_t s, const float* col, float* dx, const cpu::ConvGeometry& g) {
  const int64_t total = g.c_in * g.h * g.w;
  SL_LAUNCH(col2im_k, total, s, col, dx, g, g.h_out(), g.w_out(), total);
}
void relu_forward(cudaStream_t s, const float* x, float* y, int64_t n) {
  SL_LAUNCH(relu_fwd_k, n, s, x, y, n);
}
void relu_backward(cudaStream_t s, const float* x, const float* dy, float* dx,
                   int64_t n) {
  SL_LAUNCH(relu_bwd_k, n, s, x, dy, dx, n);
}
void maxpool_forward(cudaStream_t s, const float* x, float* y, int64_t* argmax,
                     int64_t planes, int64_t h, int64_t w, int64_t k) {
  const int64_t total = planes * (h / k) * (w / k);
  SL_LAUNCH(maxpool_fwd_k, total, s, x, y, argmax, total, h, w, k);
}
void maxpool_backward(cudaStream_t s, const float* dy, const int64_t* argmax, float* dx,
                      int64_t out_count, int64_t in_count) {
  SL_CHECK_CUDA(cudaMemsetAsync(dx, 0, in_count * sizeof(float), s));
  SL_LAUNCH(maxpool_bwd_k, out_count, s, dy, argmax, dx, out_count);
}
void mse_terms(cudaStream_t s, const float* y, const float* t, float* dy, float* terms,
               int64_t n) {
  SL_LAUNCH(mse_k, n, s, y, t, dy, terms, n);
}
void cross_entropy_terms(cudaStream_t s, const float* z, const int32_t* labels, float* dz,
                         float* terms, int64_t n, int64_t classes) {
  SL_LAUNCH(ce_k, n, s, z, labels, dz, terms, n, classes);
}
void sgd_step(cudaStream_t s, float* p, const float* g, float* buf, int64_t n, float lr,
              float momentum, float dampening, float weight_decay, bool nesterov,
              bool first_step) {
  SL_LAUNCH(sgd_k, n, s, p, g, buf, n, lr, momentum, dampening, weight_decay, nesterov,
            first_step);
}
void adamw_step(cudaStream_t s, float* p, const float* g, float* m, float* v, int64_t n,
                const AdamWScalars& scalars) {
  SL_LAUNCH(adamw_k, n, s, p, g, m, v, n, scalars);
}
void scale(cudaStream_t s, float* x, float factor, int64_t n) {
  SL_LAUNCH(scale_k, n, s, x, factor, n);
}

}  // namespace seedloader::ddp::gpu::kernels
