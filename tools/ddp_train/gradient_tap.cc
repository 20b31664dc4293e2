#include "tools/ddp_train/gradient_tap.h"

#include <cstring>

#ifdef SEEDLOADER_HAS_CUDA
#include "ddp/gpu_kernels.h"
#endif

namespace seedloader::train {
namespace {

void copy_floats(const ddp::ExecContext& ctx, float* dst, const float* src,
                 std::int64_t n) {
  SL_GPU_DISPATCH(ctx, ddp::gpu::copy(*ctx.gpu, dst, src, n));
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}

}  // namespace

void GradientTap::forward(const ddp::ExecContext& ctx, const float* x,
                          const ddp::Shape& in, float* y) {
  copy_floats(ctx, y, x, ddp::element_count(in));
}

void GradientTap::backward(const ddp::ExecContext& ctx, const float*,
                           const ddp::Shape& in, const float*, const float* dy,
                           float* dx) {
  dy_ = dy;
  if (dx) copy_floats(ctx, dx, dy, ddp::element_count(in));
}

}  // namespace seedloader::train
