// ConvGeometry: the shape of one 2-D convolution (square kernel, stride, zero
// padding) shared by the CPU and CUDA kernels. A plain value type; C++17 so the CUDA
// sources can include it.
#pragma once

#include <cstdint>

namespace seedloader::ddp::cpu {

struct ConvGeometry {
  int64_t c_in, h, w, c_out, k, stride, pad;
  int64_t h_out() const { return (h + 2 * pad - k) / stride + 1; }
  int64_t w_out() const { return (w + 2 * pad - k) / stride + 1; }
};

}  // namespace seedloader::ddp::cpu
