// CPU forward/backward kernels for the layers and losses, templated on the scalar so
// gradient checks run them in double precision while training uses float. Matrix work
// goes through Eigen; everything is row-major: activations [N, features], images
// NCHW, Linear weight [out, in], Conv2d weight [Cout, Cin, k, k] (PyTorch's layouts).
// Backward kernels ACCUMULATE into parameter gradients (like PyTorch's .grad) and
// OVERWRITE the input gradient. Pure functions; thread-safe on distinct buffers.
#pragma once

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ddp/conv_geometry.h"

namespace seedloader::ddp::cpu {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Map = Eigen::Map<RowMat<T>>;
template <typename T>
using CMap = Eigen::Map<const RowMat<T>>;

// y[n, out] = x[n, in] * w[out, in]^T + b[out]
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* y, int64_t n, int64_t in,
                    int64_t out) {
  Map<T> Y(y, n, out);
  Y.noalias() = CMap<T>(x, n, in) * CMap<T>(w, out, in).transpose();
  Y.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(b, out);
}

// Parameter gradients: dw += dy^T x; db += sum over rows of dy.
template <typename T>
void linear_backward_params(const T* x, const T* dy, T* dw, T* db, int64_t n, int64_t in,
                            int64_t out) {
  CMap<T> DY(dy, n, out);
  Map<T>(dw, out, in).noalias() += DY.transpose() * CMap<T>(x, n, in);
  Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(db, out) += DY.colwise().sum();
}

// Input gradient: dx = dy w.
template <typename T>
void linear_backward_input(const T* w, const T* dy, T* dx, int64_t n, int64_t in,
                           int64_t out) {
  Map<T>(dx, n, in).noalias() = CMap<T>(dy, n, out) * CMap<T>(w, out, in);
}

// Both of the above (dx skipped when null).
template <typename T>
void linear_backward(const T* x, const T* w, const T* dy, T* dw, T* db, T* dx, int64_t n,
                     int64_t in, int64_t out) {
  linear_backward_params(x, dy, dw, db, n, in, out);
  if (dx) linear_backward_input(w, dy, dx, n, in, out);
}

template <typename T>
void relu_forward(const T* x, T* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

// dx = dy where the input was positive (PyTorch: gradient 0 at exactly 0).
template <typename T>
void relu_backward(const T* x, const T* dy, T* dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dx[i] = x[i] > T(0) ? dy[i] : T(0);
}

// col[(c*k + i)*k + j, oh*w_out + ow] = x[c, oh*s + i - p, ow*s + j - p] (0 outside).
template <typename T>
void im2col(const T* x, T* col, const ConvGeometry& g) {
  const int64_t ho = g.h_out(), wo = g.w_out();
  for (int64_t c = 0; c < g.c_in; ++c)
    for (int64_t i = 0; i < g.k; ++i)
      for (int64_t j = 0; j < g.k; ++j) {
        T* row = col + ((c * g.k + i) * g.k + j) * ho * wo;
        for (int64_t oh = 0; oh < ho; ++oh) {
          const int64_t ih = oh * g.stride + i - g.pad;
          for (int64_t ow = 0; ow < wo; ++ow) {
            const int64_t iw = ow * g.stride + j - g.pad;
            const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
            row[oh * wo + ow] = inside ? x[(c * g.h + ih) * g.w + iw] : T(0);
          }
        }
      }
}

// The adjoint of im2col: dx (overwritten) gathers every column entry that read it.
template <typename T>
void col2im(const T* col, T* dx, const ConvGeometry& g) {
  std::fill(dx, dx + g.c_in * g.h * g.w, T(0));
  const int64_t ho = g.h_out(), wo = g.w_out();
  for (int64_t c = 0; c < g.c_in; ++c)
    for (int64_t i = 0; i < g.k; ++i)
      for (int64_t j = 0; j < g.k; ++j) {
        const T* row = col + ((c * g.k + i) * g.k + j) * ho * wo;
        for (int64_t oh = 0; oh < ho; ++oh) {
          const int64_t ih = oh * g.stride + i - g.pad;
          if (ih < 0 || ih >= g.h) continue;
          for (int64_t ow = 0; ow < wo; ++ow) {
            const int64_t iw = ow * g.stride + j - g.pad;
            if (iw >= 0 && iw < g.w) dx[(c * g.h + ih) * g.w + iw] += row[oh * wo + ow];
          }
        }
      }
}

// y[n, co, :] = w[co, :] * im2col(x[n]) + b[co]. `col` is scratch of
// c_in*k*k*h_out*w_out elements.
template <typename T>
void conv2d_forward(const T* x, const T* w, const T* b, T* y, T* col, int64_t n,
                    const ConvGeometry& g) {
  const int64_t kk = g.c_in * g.k * g.k, hw = g.h_out() * g.w_out();
  for (int64_t s = 0; s < n; ++s) {
    im2col(x + s * g.c_in * g.h * g.w, col, g);
    Map<T> Y(y + s * g.c_out * hw, g.c_out, hw);
    Y.noalias() = CMap<T>(w, g.c_out, kk) * CMap<T>(col, kk, hw);
    Y.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(b, g.c_out);
  }
}

// Parameter gradients: dw += dy_n im2col(x_n)^T; db += sum over n and pixels of dy.
// `col` is scratch like conv2d_forward's.
template <typename T>
void conv2d_backward_params(const T* x, const T* dy, T* dw, T* db, T* col, int64_t n,
                            const ConvGeometry& g) {
  const int64_t kk = g.c_in * g.k * g.k, hw = g.h_out() * g.w_out();
  for (int64_t s = 0; s < n; ++s) {
    CMap<T> DY(dy + s * g.c_out * hw, g.c_out, hw);
    im2col(x + s * g.c_in * g.h * g.w, col, g);
    Map<T>(dw, g.c_out, kk).noalias() += DY * CMap<T>(col, kk, hw).transpose();
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(db, g.c_out) += DY.rowwise().sum();
  }
}

// Input gradient: dx_n = col2im(w^T dy_n). `dcol` is scratch like `col`.
template <typename T>
void conv2d_backward_input(const T* w, const T* dy, T* dx, T* dcol, int64_t n,
                           const ConvGeometry& g) {
  const int64_t kk = g.c_in * g.k * g.k, hw = g.h_out() * g.w_out();
  for (int64_t s = 0; s < n; ++s) {
    Map<T>(dcol, kk, hw).noalias() =
        CMap<T>(w, g.c_out, kk).transpose() * CMap<T>(dy + s * g.c_out * hw, g.c_out, hw);
    col2im(dcol, dx + s * g.c_in * g.h * g.w, g);
  }
}

// Both of the above (dx skipped when null).
template <typename T>
void conv2d_backward(const T* x, const T* w, const T* dy, T* dw, T* db, T* dx, T* col,
                     T* dcol, int64_t n, const ConvGeometry& g) {
  conv2d_backward_params(x, dy, dw, db, col, n, g);
  if (dx) conv2d_backward_input(w, dy, dx, dcol, n, g);
}

// Max pooling with a k x k window and stride k (PyTorch's default stride), no
// padding. `argmax` records, per output, the flat input index that won (first
// maximum on ties, as PyTorch).
template <typename T>
void maxpool_forward(const T* x, T* y, int64_t* argmax, int64_t planes, int64_t h,
                     int64_t w, int64_t k) {
  const int64_t ho = h / k, wo = w / k;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow) {
        int64_t best = p * h * w + (oh * k) * w + ow * k;
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j) {
            const int64_t idx = p * h * w + (oh * k + i) * w + (ow * k + j);
            if (x[idx] > x[best]) best = idx;
          }
        const int64_t o = (p * ho + oh) * wo + ow;
        y[o] = x[best];
        argmax[o] = best;
      }
}

template <typename T>
void maxpool_backward(const T* dy, const int64_t* argmax, T* dx, int64_t out_count,
                      int64_t in_count) {
  std::fill(dx, dx + in_count, T(0));
  for (int64_t o = 0; o < out_count; ++o) dx[argmax[o]] += dy[o];
}

// Mean squared error over all elements; writes d loss / d y into dy.
template <typename T>
T mse_loss(const T* y, const T* target, T* dy, int64_t count) {
  T sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    const T d = y[i] - target[i];
    sum += d * d;
    dy[i] = T(2) * d / static_cast<T>(count);
  }
  return sum / static_cast<T>(count);
}

// Mean over the batch of -log softmax(logits)[label]; dlogits = (softmax - onehot)/n.
template <typename T>
T cross_entropy_loss(const T* logits, const int32_t* labels, T* dlogits, int64_t n,
                     int64_t classes) {
  T total = 0;
  for (int64_t s = 0; s < n; ++s) {
    const T* z = logits + s * classes;
    T* dz = dlogits + s * classes;
    const T zmax = *std::max_element(z, z + classes);
    T sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - zmax);
    const T log_sum = std::log(sum) + zmax;
    total += log_sum - z[labels[s]];
    for (int64_t c = 0; c < classes; ++c)
      dz[c] =
          (std::exp(z[c] - log_sum) - (c == labels[s] ? T(1) : T(0))) / static_cast<T>(n);
  }
  return total / static_cast<T>(n);
}

}  // namespace seedloader::ddp::cpu
