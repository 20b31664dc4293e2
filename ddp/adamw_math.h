// The per-element AdamW update, shared by the CPU loop and the CUDA kernel so the
// two cannot drift. It follows torch.optim.AdamW (single-tensor path) operation
// by operation: the scalars are PyTorch's Python floats, computed in double by
// the caller and rounded to float once, and the tensor ops are lerp (m),
// mul+addcmul (v) and addcdiv (p). Stateless.
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define SL_HOST_DEVICE __host__ __device__
#else
#define SL_HOST_DEVICE
#endif

namespace seedloader::ddp {

struct AdamWScalars {
  float decay;        // 1 - lr * weight_decay
  float lerp_weight;  // 1 - beta1
  float beta2;
  float one_minus_beta2;  // 1 - beta2
  float eps;
  float step_size;  // lr / (1 - beta1^t)
  float bc2_sqrt;   // sqrt(1 - beta2^t)
};

SL_HOST_DEVICE inline void adamw_update(float& p, float g, float& m, float& v,
                                        const AdamWScalars& s) {
  p *= s.decay;
  m += s.lerp_weight * (g - m);  // exp_avg.lerp_(grad, 1 - beta1), weight < 0.5
  v = v * s.beta2 + s.one_minus_beta2 * g * g;
  p += -s.step_size * (m / (sqrtf(v) / s.bc2_sqrt + s.eps));
}

}  // namespace seedloader::ddp
