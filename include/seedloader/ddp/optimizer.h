// Optimizers over a Sequential's flat parameter and gradient buffers, with PyTorch's
// update formulas (torch.optim.SGD and torch.optim.AdamW, foreach=False semantics),
// on the model's device. Options are validated at construction (ConfigError).
// State buffers are flat and parallel to the parameters. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "seedloader/ddp/device.h"
#include "seedloader/ddp/sequential.h"

namespace seedloader::ddp {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one update from the current gradients.
  virtual void step() = 0;
  // Named flat state buffers (for checkpoints), e.g. "momentum_buffer".
  virtual std::vector<std::pair<std::string, DeviceArray<float>*>> state() = 0;
  int64_t steps() const { return steps_; }
  // Restores the step count (bias correction, SGD's first step) from a checkpoint.
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  int64_t steps_ = 0;
};

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

// g += wd * p; buf = g (first step) or momentum * buf + (1 - dampening) * g;
// g = nesterov ? g + momentum * buf : buf; p -= lr * g.
class Sgd final : public Optimizer {
 public:
  Sgd(Sequential& model, SgdOptions options);
  void step() override;
  std::vector<std::pair<std::string, DeviceArray<float>*>> state() override;

 private:
  Sequential& model_;
  SgdOptions opt_;
  DeviceArray<float> momentum_;
};

// Double, like PyTorch's Python floats: the bias corrections depend on it
// (1 - 0.999f differs from 1 - 0.999 by 1.3e-5 relative).
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

// p *= 1 - lr * wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
class AdamW final : public Optimizer {
 public:
  AdamW(Sequential& model, AdamWOptions options);
  void step() override;
  std::vector<std::pair<std::string, DeviceArray<float>*>> state() override;

 private:
  Sequential& model_;
  AdamWOptions opt_;
  DeviceArray<float> m_, v_;
};

}  // namespace seedloader::ddp
