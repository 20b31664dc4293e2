// GradientTap: a parameterless pass-through layer placed first in a model-parallel
// stage, so the stage's backward computes the gradient with respect to its real
// input (Sequential skips dx for its first layer) and hands it here. Forward
// copies x to y. input_gradient() is valid until the stage's next backward.
// Not thread-safe.
#pragma once

#include "seedloader/ddp/layer.h"

namespace seedloader::train {

class GradientTap final : public ddp::Layer {
 public:
  std::string kind() const override { return "GradientTap"; }
  ddp::Shape output_shape(const ddp::Shape& in) const override { return in; }
  void forward(const ddp::ExecContext& ctx, const float* x, const ddp::Shape& in,
               float* y) override;
  void backward(const ddp::ExecContext& ctx, const float* x, const ddp::Shape& in,
                const float* y, const float* dy, float* dx) override;
  // Sequential gives its first layer its dy here (it computes no input gradient
  // for it), so this is where the stage's input gradient is recorded.
  void backward_params(const ddp::ExecContext& ctx, const float* x, const ddp::Shape& in,
                       const float* dy) override {
    (void)ctx, (void)x, (void)in;
    dy_ = dy;
  }
  const float* input_gradient() const { return dy_; }

 private:
  const float* dy_ = nullptr;
};

}  // namespace seedloader::train
