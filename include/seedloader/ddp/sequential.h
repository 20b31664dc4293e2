// Sequential: a chain of layers with every parameter in one flat buffer and every
// gradient in another (same offsets), on one device. Parameters are named as
// PyTorch's nn.Sequential state_dict names them ("0.weight", "0.bias", "2.weight"...)
// and initialised as PyTorch's defaults do (Kaiming-uniform a=sqrt(5) weights,
// uniform(+-1/sqrt(fan_in)) biases), drawn from the given seeded stream, layer by
// layer, weight before bias.
// A BackwardObserver sees backward begin, each parameter's gradient become final
// (reverse layer order) and backward end: the Reducer hooks in there.
// Owns its layers, activations and buffers; copying is deleted. Not thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seedloader/ddp/device.h"
#include "seedloader/ddp/layer.h"
#include "seedloader/pcg64_stream.h"

namespace seedloader::ddp {

struct ParamInfo {
  std::string name;  // "0.weight"
  Shape shape;
  std::size_t offset = 0;  // into the flat buffers, in elements
  std::size_t count = 0;
  std::size_t layer = 0;
};

class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  virtual void on_backward_begin() = 0;
  // Parameter `index`'s gradient is complete for this backward pass.
  virtual void on_grad_ready(std::size_t index) = 0;
  virtual void on_backward_end() = 0;
};

class Sequential {
 public:
  Sequential(std::vector<std::unique_ptr<Layer>> layers, Device device, Rng& rng);
  ~Sequential();
  Sequential(const Sequential&) = delete;
  Sequential& operator=(const Sequential&) = delete;

  // Runs every layer; returns the output (on the model's device), valid until the
  // next forward. `x` (same device) must stay valid until backward has run.
  const float* forward(const float* x, const Shape& in_shape);
  const Shape& output_shape() const { return shapes_.back(); }
  // Backpropagates d loss / d output (same device, output_shape()); gradients
  // accumulate into gradients(). REQUIRES: forward ran since the last backward.
  void backward(const float* grad_output);
  void zero_grad() { grads_.zero(); }

  std::span<float> parameters() { return params_.span(); }
  std::span<float> gradients() { return grads_.span(); }
  const std::vector<ParamInfo>& param_info() const { return info_; }
  Device device() const { return ctx_.device; }
  const ExecContext& context() const { return ctx_; }
  void set_observer(BackwardObserver* observer) { observer_ = observer; }

  // Host copies of the flat buffers (for checks and checkpoints).
  std::vector<float> parameters_to_host() const { return params_.to_host(); }
  std::vector<float> gradients_to_host() const { return grads_.to_host(); }
  void load_parameters(std::span<const float> host_values);

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::unique_ptr<GpuContext> gpu_;
  ExecContext ctx_;
  DeviceArray<float> params_, grads_;
  std::vector<ParamInfo> info_;
  std::vector<std::vector<std::size_t>> layer_params_;  // param indices per layer
  const float* input_ = nullptr;
  std::vector<Shape> shapes_;             // shapes_[i] = input of layer i
  std::vector<DeviceArray<float>> acts_;  // acts_[i] = output of layer i
  DeviceArray<float> grad_a_, grad_b_;    // ping-pong activation gradients
  BackwardObserver* observer_ = nullptr;
  bool forward_done_ = false;
};

}  // namespace seedloader::ddp
