#include "seedloader/ddp/layers.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ddp/cpu_kernels.h"

#include "ddp/gpu_kernels.h"
#include "seedloader/error.h"

namespace seedloader::ddp {

int64_t element_count(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
void require(bool ok, const std::string& layer, const Shape& in,
             const std::string& want) {
  if (!ok)
    throw ConfigError(layer + ": input shape " + shape_string(in) + " does not fit (" +
                      want + ")");
}
}  // namespace

// ---- Linear ----

Linear::Linear(int64_t in_features, int64_t out_features)
    : in_(in_features), out_(out_features) {
  if (in_ <= 0 || out_ <= 0) throw ConfigError("Linear: features must be positive");
}

std::vector<ParamSpec> Linear::param_specs() const {
  return {{"weight", {out_, in_}, in_, false}, {"bias", {out_}, in_, true}};
}

void Linear::bind(std::span<float> params, std::span<float> grads) {
  w_ = params.data();
  b_ = w_ + out_ * in_;
  dw_ = grads.data();
  db_ = dw_ + out_ * in_;
}

Shape Linear::output_shape(const Shape& in) const {
  require(in.size() == 2 && in[1] == in_, "Linear", in,
          "want [N, " + std::to_string(in_) + "]");
  return {in[0], out_};
}

void Linear::forward(const ExecContext& ctx, const float* x, const Shape& in, float* y) {
  SL_GPU_DISPATCH(ctx, gpu::linear_forward(*ctx.gpu, x, w_, b_, y, in[0], in_, out_));
  cpu::linear_forward(x, w_, b_, y, in[0], in_, out_);
}

void Linear::backward_params(const ExecContext& ctx, const float* x, const Shape& in,
                             const float* dy) {
  SL_GPU_DISPATCH(
      ctx, gpu::linear_backward_params(*ctx.gpu, x, dy, dw_, db_, in[0], in_, out_));
  cpu::linear_backward_params(x, dy, dw_, db_, in[0], in_, out_);
}

void Linear::backward(const ExecContext& ctx, const float*, const Shape& in, const float*,
                      const float* dy, float* dx) {
  SL_GPU_DISPATCH(ctx,
                  gpu::linear_backward_input(*ctx.gpu, w_, dy, dx, in[0], in_, out_));
  cpu::linear_backward_input(w_, dy, dx, in[0], in_, out_);
}

// ---- ReLU ----

void ReLU::forward(const ExecContext& ctx, const float* x, const Shape& in, float* y) {
  SL_GPU_DISPATCH(ctx, gpu::relu_forward(*ctx.gpu, x, y, element_count(in)));
  cpu::relu_forward(x, y, element_count(in));
}

void ReLU::backward(const ExecContext& ctx, const float* x, const Shape& in, const float*,
                    const float* dy, float* dx) {
  SL_GPU_DISPATCH(ctx, gpu::relu_backward(*ctx.gpu, x, dy, dx, element_count(in)));
  cpu::relu_backward(x, dy, dx, element_count(in));
}

// ---- Conv2d ----

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride,
               int64_t padding)
    : c_in_(in_channels),
      c_out_(out_channels),
      k_(kernel),
      stride_(stride),
      pad_(padding) {
  if (c_in_ <= 0 || c_out_ <= 0 || k_ <= 0 || stride_ <= 0 || pad_ < 0)
    throw ConfigError("Conv2d: channels, kernel and stride must be positive");
}

std::vector<ParamSpec> Conv2d::param_specs() const {
  const int64_t fan_in = c_in_ * k_ * k_;
  return {{"weight", {c_out_, c_in_, k_, k_}, fan_in, false},
          {"bias", {c_out_}, fan_in, true}};
}

void Conv2d::bind(std::span<float> params, std::span<float> grads) {
  const int64_t wn = c_out_ * c_in_ * k_ * k_;
  w_ = params.data();
  b_ = w_ + wn;
  dw_ = grads.data();
  db_ = dw_ + wn;
}

cpu::ConvGeometry Conv2d::geometry(const Shape& in) const {
  return {c_in_, in[2], in[3], c_out_, k_, stride_, pad_};
}

Shape Conv2d::output_shape(const Shape& in) const {
  require(in.size() == 4 && in[1] == c_in_ && in[2] + 2 * pad_ >= k_ &&
              in[3] + 2 * pad_ >= k_,
          "Conv2d", in, "want [N, " + std::to_string(c_in_) + ", H, W], H, W >= kernel");
  auto g = geometry(in);
  return {in[0], c_out_, g.h_out(), g.w_out()};
}

void Conv2d::ensure_scratch(const ExecContext& ctx, const cpu::ConvGeometry& g) {
  const auto n = static_cast<std::size_t>(c_in_ * k_ * k_ * g.h_out() * g.w_out());
  col_.set_device(ctx.device);
  dcol_.set_device(ctx.device);
  col_.resize(n);
  dcol_.resize(n);
}

void Conv2d::forward(const ExecContext& ctx, const float* x, const Shape& in, float* y) {
  auto g = geometry(in);
  ensure_scratch(ctx, g);
  SL_GPU_DISPATCH(ctx,
                  gpu::conv2d_forward(*ctx.gpu, x, w_, b_, y, col_.data(), in[0], g));
  cpu::conv2d_forward(x, w_, b_, y, col_.data(), in[0], g);
}

void Conv2d::backward_params(const ExecContext& ctx, const float* x, const Shape& in,
                             const float* dy) {
  auto g = geometry(in);
  ensure_scratch(ctx, g);
  SL_GPU_DISPATCH(
      ctx, gpu::conv2d_backward_params(*ctx.gpu, x, dy, dw_, db_, col_.data(), in[0], g));
  cpu::conv2d_backward_params(x, dy, dw_, db_, col_.data(), in[0], g);
}

void Conv2d::backward(const ExecContext& ctx, const float*, const Shape& in, const float*,
                      const float* dy, float* dx) {
  auto g = geometry(in);
  ensure_scratch(ctx, g);
  SL_GPU_DISPATCH(
      ctx, gpu::conv2d_backward_input(*ctx.gpu, w_, dy, dx, dcol_.data(), in[0], g));
  cpu::conv2d_backward_input(w_, dy, dx, dcol_.data(), in[0], g);
}

// ---- MaxPool2d ----

MaxPool2d::MaxPool2d(int64_t kernel) : k_(kernel) {
  if (k_ <= 0) throw ConfigError("MaxPool2d: kernel must be positive");
}

Shape MaxPool2d::output_shape(const Shape& in) const {
  require(in.size() == 4 && in[2] >= k_ && in[3] >= k_, "MaxPool2d", in,
          "want [N, C, H, W], H, W >= kernel");
  return {in[0], in[1], in[2] / k_, in[3] / k_};
}

void MaxPool2d::forward(const ExecContext& ctx, const float* x, const Shape& in,
                        float* y) {
  argmax_.set_device(ctx.device);
  argmax_.resize(static_cast<std::size_t>(element_count(output_shape(in))));
  SL_GPU_DISPATCH(ctx, gpu::maxpool_forward(*ctx.gpu, x, y, argmax_.data(), in[0] * in[1],
                                            in[2], in[3], k_));
  cpu::maxpool_forward(x, y, argmax_.data(), in[0] * in[1], in[2], in[3], k_);
}

void MaxPool2d::backward(const ExecContext& ctx, const float*, const Shape& in,
                         const float*, const float* dy, float* dx) {
  const int64_t out_count = element_count(output_shape(in));
  SL_GPU_DISPATCH(ctx, gpu::maxpool_backward(*ctx.gpu, dy, argmax_.data(), dx, out_count,
                                             element_count(in)));
  cpu::maxpool_backward(dy, argmax_.data(), dx, out_count, element_count(in));
}

// ---- Flatten ----

Shape Flatten::output_shape(const Shape& in) const {
  require(!in.empty(), "Flatten", in, "want at least a batch dimension");
  return {in[0], element_count(in) / std::max<int64_t>(in[0], 1)};
}

void Flatten::forward(const ExecContext& ctx, const float* x, const Shape& in, float* y) {
  SL_GPU_DISPATCH(ctx, gpu::copy(*ctx.gpu, y, x, element_count(in)));
  std::memcpy(y, x, static_cast<std::size_t>(element_count(in)) * sizeof(float));
}

void Flatten::backward(const ExecContext& ctx, const float*, const Shape& in,
                       const float*, const float* dy, float* dx) {
  SL_GPU_DISPATCH(ctx, gpu::copy(*ctx.gpu, dx, dy, element_count(in)));
  std::memcpy(dx, dy, static_cast<std::size_t>(element_count(in)) * sizeof(float));
}

}  // namespace seedloader::ddp
