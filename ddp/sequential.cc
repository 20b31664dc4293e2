#include "seedloader/ddp/sequential.h"

#include <cmath>

#include "ddp/gpu_kernels.h"
#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader::ddp {

Sequential::Sequential(std::vector<std::unique_ptr<Layer>> layers, Device device,
                       Rng& rng)
    : layers_(std::move(layers)) {
  if (layers_.empty()) throw ConfigError("Sequential: no layers");
  ctx_.device = device;
  if (device == Device::kCuda) {
    gpu_ = std::make_unique<GpuContext>();
    ctx_.gpu = gpu_.get();
  }
  std::size_t total = 0;
  layer_params_.resize(layers_.size());
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    for (const ParamSpec& spec : layers_[l]->param_specs()) {
      ParamInfo p;
      p.name = std::to_string(l) + "." + spec.name;
      p.shape = spec.shape;
      p.offset = total;
      p.count = static_cast<std::size_t>(element_count(spec.shape));
      p.layer = l;
      total += p.count;
      layer_params_[l].push_back(info_.size());
      info_.push_back(std::move(p));
    }
  }
  // PyTorch's reset_parameters(): kaiming_uniform_(a=sqrt(5)) gives bound
  // gain * sqrt(3 / fan_in) with gain = sqrt(2 / (1 + 5)), i.e. 1 / sqrt(fan_in);
  // the bias bound is 1 / sqrt(fan_in) too.
  std::vector<float> host(total);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    auto specs = layers_[l]->param_specs();
    for (std::size_t s = 0; s < specs.size(); ++s) {
      const ParamInfo& p = info_[layer_params_[l][s]];
      const double bound = 1.0 / std::sqrt(static_cast<double>(specs[s].fan_in));
      for (std::size_t i = 0; i < p.count; ++i)
        host[p.offset + i] = static_cast<float>(uniform(rng, -bound, bound));
    }
  }
  params_.set_device(device);
  grads_.set_device(device);
  params_.copy_from_host(host);
  grads_.resize(total);
  grads_.zero();
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    if (layer_params_[l].empty()) continue;
    const ParamInfo& first = info_[layer_params_[l].front()];
    const ParamInfo& last = info_[layer_params_[l].back()];
    const std::size_t n = last.offset + last.count - first.offset;
    layers_[l]->bind(params_.span().subspan(first.offset, n),
                     grads_.span().subspan(first.offset, n));
  }
  acts_.resize(layers_.size());
  for (auto& a : acts_) a.set_device(device);
  grad_a_.set_device(device);
  grad_b_.set_device(device);
}

Sequential::~Sequential() = default;

const float* Sequential::forward(const float* x, const Shape& in_shape) {
  input_ = x;
  shapes_.assign(1, in_shape);
  const float* cur = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Shape out = layers_[l]->output_shape(shapes_.back());
    acts_[l].resize(static_cast<std::size_t>(element_count(out)));
    layers_[l]->forward(ctx_, cur, shapes_.back(), acts_[l].data());
    cur = acts_[l].data();
    shapes_.push_back(std::move(out));
  }
  forward_done_ = true;
  return cur;
}

void Sequential::backward(const float* grad_output) {
  if (!forward_done_) throw ConfigError("Sequential::backward without a forward");
  forward_done_ = false;
  if (observer_) observer_->on_backward_begin();
  const float* dy = grad_output;
  for (std::size_t l = layers_.size(); l-- > 0;) {
    const float* x = l == 0 ? input_ : acts_[l - 1].data();
    // Parameter gradients first, so their bucket can start reducing while the
    // input gradient (often the larger half of the work) is computed.
    layers_[l]->backward_params(ctx_, x, shapes_[l], dy);
    if (observer_) {
      // Reverse order within the layer too, so buckets fill back to front.
      for (auto it = layer_params_[l].rbegin(); it != layer_params_[l].rend(); ++it)
        observer_->on_grad_ready(*it);
    }
    if (l == 0) break;  // nobody needs d loss / d input
    DeviceArray<float>& target = (l % 2 == 0) ? grad_a_ : grad_b_;
    target.resize(static_cast<std::size_t>(element_count(shapes_[l])));
    layers_[l]->backward(ctx_, x, shapes_[l], acts_[l].data(), dy, target.data());
    dy = target.data();
  }
  if (observer_) observer_->on_backward_end();
}

void Sequential::load_parameters(std::span<const float> host_values) {
  if (host_values.size() != params_.size())
    throw ConfigError(
        "Sequential::load_parameters: " + std::to_string(host_values.size()) +
        " values for " + std::to_string(params_.size()) + " parameters");
  params_.copy_from_host(host_values);
}

}  // namespace seedloader::ddp
