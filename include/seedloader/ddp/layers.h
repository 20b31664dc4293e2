// The layers: Linear, ReLU, Conv2d, MaxPool2d, Flatten, with PyTorch's layouts and
// semantics (Linear weight [out, in]; Conv2d weight [Cout, Cin, k, k], NCHW; MaxPool2d
// stride = kernel; Flatten keeps the batch dimension). Not thread-safe.
#pragma once

#include "seedloader/ddp/device.h"
#include "seedloader/ddp/layer.h"

namespace seedloader::ddp {

namespace cpu {
struct ConvGeometry;  // ddp/conv_geometry.h
}  // namespace cpu

class Linear final : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features);
  std::string kind() const override { return "Linear"; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  Shape output_shape(const Shape& in) const override;
  void forward(const ExecContext& ctx, const float* x, const Shape& in,
               float* y) override;
  void backward_params(const ExecContext& ctx, const float* x, const Shape& in,
                       const float* dy) override;
  void backward(const ExecContext& ctx, const float* x, const Shape& in, const float* y,
                const float* dy, float* dx) override;

 private:
  int64_t in_, out_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
};

class ReLU final : public Layer {
 public:
  std::string kind() const override { return "ReLU"; }
  Shape output_shape(const Shape& in) const override { return in; }
  void forward(const ExecContext& ctx, const float* x, const Shape& in,
               float* y) override;
  void backward(const ExecContext& ctx, const float* x, const Shape& in, const float* y,
                const float* dy, float* dx) override;
};

class Conv2d final : public Layer {
 public:
  // Square kernel; stride and zero padding as PyTorch's Conv2d.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1,
         int64_t padding = 0);
  std::string kind() const override { return "Conv2d"; }
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  Shape output_shape(const Shape& in) const override;
  void forward(const ExecContext& ctx, const float* x, const Shape& in,
               float* y) override;
  void backward_params(const ExecContext& ctx, const float* x, const Shape& in,
                       const float* dy) override;
  void backward(const ExecContext& ctx, const float* x, const Shape& in, const float* y,
                const float* dy, float* dx) override;

 private:
  cpu::ConvGeometry geometry(const Shape& in) const;
  void ensure_scratch(const ExecContext& ctx, const cpu::ConvGeometry& g);

  int64_t c_in_, c_out_, k_, stride_, pad_;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
  DeviceArray<float> col_, dcol_;
};

class MaxPool2d final : public Layer {
 public:
  explicit MaxPool2d(int64_t kernel);
  std::string kind() const override { return "MaxPool2d"; }
  Shape output_shape(const Shape& in) const override;
  void forward(const ExecContext& ctx, const float* x, const Shape& in,
               float* y) override;
  void backward(const ExecContext& ctx, const float* x, const Shape& in, const float* y,
                const float* dy, float* dx) override;

 private:
  int64_t k_;
  DeviceArray<int64_t> argmax_;
};

class Flatten final : public Layer {
 public:
  std::string kind() const override { return "Flatten"; }
  Shape output_shape(const Shape& in) const override;
  void forward(const ExecContext& ctx, const float* x, const Shape& in,
               float* y) override;
  void backward(const ExecContext& ctx, const float* x, const Shape& in, const float* y,
                const float* dy, float* dx) override;
};

}  // namespace seedloader::ddp
