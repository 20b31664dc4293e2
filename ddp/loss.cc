#include "seedloader/ddp/loss.h"

#include <string>

#include "ddp/cpu_kernels.h"
#include "ddp/gpu_kernels.h"
#include "seedloader/error.h"

namespace seedloader::ddp {

namespace {
float mse_on(const ExecContext& ctx, const float* y, const float* t, float* g,
             int64_t n) {
  SL_GPU_RETURN(ctx, gpu::mse_loss(*ctx.gpu, y, t, g, n));
  return cpu::mse_loss(y, t, g, n);
}
}  // namespace

float mse_loss(const ExecContext& ctx, const float* y, const float* target, float* grad,
               int64_t count) {
  if (count <= 0) throw ConfigError("mse_loss: no elements");
  return mse_on(ctx, y, target, grad, count);
}

float cross_entropy_loss(const ExecContext& ctx, const float* logits,
                         const int32_t* labels, float* grad, int64_t n, int64_t classes) {
  if (n <= 0 || classes <= 0) throw ConfigError("cross_entropy_loss: empty input");
  if (!ctx.on_gpu()) {
    for (int64_t i = 0; i < n; ++i)
      if (labels[i] < 0 || labels[i] >= classes)
        throw DataError("cross_entropy_loss: label " + std::to_string(labels[i]) +
                        " of row " + std::to_string(i) + " is outside [0, " +
                        std::to_string(classes) + ")");
  }
  SL_GPU_RETURN(ctx, gpu::cross_entropy_loss(*ctx.gpu, logits, labels, grad, n, classes));
  return cpu::cross_entropy_loss(logits, labels, grad, n, classes);
}

}  // namespace seedloader::ddp
