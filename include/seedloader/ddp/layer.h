// Layer: one stage of a Sequential model. A layer declares its parameters
// (param_specs), receives views of the model's flat parameter and gradient buffers
// (bind), and computes forward and backward (parameter gradients, then the input
// gradient, as separate steps) on the model's device. The model owns
// every activation buffer; a layer owns only its scratch (im2col columns, argmax).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seedloader/ddp/gpu_context.h"

namespace seedloader::ddp {

using Shape = std::vector<int64_t>;

int64_t element_count(const Shape& shape);
std::string shape_string(const Shape& shape);

struct ParamSpec {
  std::string name;  // "weight" or "bias", as in PyTorch
  Shape shape;
  int64_t fan_in = 0;  // for PyTorch's default initialisation
  bool is_bias = false;
};

class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string kind() const = 0;
  virtual std::vector<ParamSpec> param_specs() const { return {}; }
  // REQUIRES: params/grads cover exactly param_specs(), in order, on the model's device.
  virtual void bind(std::span<float> params, std::span<float> grads) {
    (void)params;
    (void)grads;
  }
  // The output shape for an input shape; throws ConfigError when they do not fit.
  virtual Shape output_shape(const Shape& in) const = 0;
  // y = layer(x). REQUIRES: y holds element_count(output_shape(in)) elements.
  virtual void forward(const ExecContext& ctx, const float* x, const Shape& in,
                       float* y) = 0;
  // Accumulates this layer's parameter gradients (none by default). Runs before
  // backward(), so the gradients can be reduced while the input gradient computes.
  virtual void backward_params(const ExecContext& ctx, const float* x, const Shape& in,
                               const float* dy) {
    (void)ctx, (void)x, (void)in, (void)dy;
  }
  // Overwrites dx = d loss / d x. Never called with a null dx.
  // `x` and `y` are the forward pass's input and output.
  virtual void backward(const ExecContext& ctx, const float* x, const Shape& in,
                        const float* y, const float* dy, float* dx) = 0;
};

}  // namespace seedloader::ddp
