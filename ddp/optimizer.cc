#include "seedloader/ddp/optimizer.h"

#include <cmath>

#include "ddp/adamw_math.h"
#include "ddp/gpu_kernels.h"
#include "seedloader/error.h"

namespace seedloader::ddp {

namespace {
void sgd_cpu(float* p, const float* g, float* buf, std::size_t n, const SgdOptions& o,
             bool first) {
  for (std::size_t i = 0; i < n; ++i) {
    float d = g[i];
    if (o.weight_decay != 0.0f) d += o.weight_decay * p[i];
    if (o.momentum != 0.0f) {
      buf[i] = first ? d : o.momentum * buf[i] + (1.0f - o.dampening) * d;
      d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
    }
    p[i] -= o.lr * d;
  }
}

void adamw_cpu(float* p, const float* g, float* m, float* v, std::size_t n,
               const AdamWScalars& s) {
  for (std::size_t i = 0; i < n; ++i) adamw_update(p[i], g[i], m[i], v[i], s);
}
}  // namespace

Sgd::Sgd(Sequential& model, SgdOptions options) : model_(model), opt_(options) {
  if (!(opt_.lr >= 0.0f) || opt_.momentum < 0.0f || opt_.weight_decay < 0.0f)
    throw ConfigError("Sgd: lr, momentum and weight_decay must be >= 0");
  if (opt_.nesterov && (opt_.momentum <= 0.0f || opt_.dampening != 0.0f))
    throw ConfigError("Sgd: nesterov needs momentum > 0 and zero dampening");
  momentum_.set_device(model.device());
  if (opt_.momentum != 0.0f) momentum_.resize(model.parameters().size());
}

void Sgd::step() {
  auto p = model_.parameters();
  auto g = model_.gradients();
  const bool first = steps_ == 0;
  ++steps_;
  SL_GPU_DISPATCH(
      model_.context(),
      gpu::kernels::sgd_step(model_.context().gpu->stream(), p.data(), g.data(),
                             momentum_.data(), static_cast<int64_t>(p.size()), opt_.lr,
                             opt_.momentum, opt_.dampening, opt_.weight_decay,
                             opt_.nesterov, first));
  sgd_cpu(p.data(), g.data(), momentum_.data(), p.size(), opt_, first);
}

std::vector<std::pair<std::string, DeviceArray<float>*>> Sgd::state() {
  if (opt_.momentum == 0.0f) return {};
  return {{"momentum_buffer", &momentum_}};
}

AdamW::AdamW(Sequential& model, AdamWOptions options) : model_(model), opt_(options) {
  if (!(opt_.lr >= 0.0) || !(opt_.eps >= 0.0) || !(opt_.weight_decay >= 0.0))
    throw ConfigError("AdamW: lr, eps and weight_decay must be >= 0");
  if (!(opt_.beta1 >= 0.0 && opt_.beta1 < 1.0 && opt_.beta2 >= 0.0 && opt_.beta2 < 1.0))
    throw ConfigError("AdamW: betas must lie in [0, 1)");
  m_.set_device(model.device());
  v_.set_device(model.device());
  m_.resize(model.parameters().size());
  v_.resize(model.parameters().size());
}

void AdamW::step() {
  auto p = model_.parameters();
  auto g = model_.gradients();
  ++steps_;
  const auto t = static_cast<double>(steps_);
  const double bc1 = 1.0 - std::pow(opt_.beta1, t);
  const double bc2 = 1.0 - std::pow(opt_.beta2, t);
  const AdamWScalars s{static_cast<float>(1.0 - opt_.lr * opt_.weight_decay),
                       static_cast<float>(1.0 - opt_.beta1),
                       static_cast<float>(opt_.beta2),
                       static_cast<float>(1.0 - opt_.beta2),
                       static_cast<float>(opt_.eps),
                       static_cast<float>(opt_.lr / bc1),
                       static_cast<float>(std::sqrt(bc2))};
  SL_GPU_DISPATCH(
      model_.context(),
      gpu::kernels::adamw_step(model_.context().gpu->stream(), p.data(), g.data(),
                               m_.data(), v_.data(), static_cast<int64_t>(p.size()), s));
  adamw_cpu(p.data(), g.data(), m_.data(), v_.data(), p.size(), s);
}

std::vector<std::pair<std::string, DeviceArray<float>*>> AdamW::state() {
  return {{"exp_avg", &m_}, {"exp_avg_sq", &v_}};
}

}  // namespace seedloader::ddp
