#include "tools/ddp_train/train_model.h"

#include <algorithm>

#include "seedloader/ddp/loss.h"
#include "seedloader/error.h"

namespace seedloader::train {

std::string shifted_name(const std::string& local, int shift) {
  std::size_t dot = local.find('.');
  if (shift == 0 || dot == std::string::npos) return local;
  return std::to_string(std::stoi(local.substr(0, dot)) + shift) + local.substr(dot);
}

std::unique_ptr<ddp::Optimizer> make_optimizer(const TrainOptions& o,
                                               ddp::Sequential& model) {
  if (o.optimizer == Optimizer::kAdamW) {
    ddp::AdamWOptions a;
    a.lr = o.lr;
    a.weight_decay = o.weight_decay;
    return std::make_unique<ddp::AdamW>(model, a);
  }
  ddp::SgdOptions s;
  s.lr = o.lr;
  s.momentum = o.momentum;
  s.weight_decay = o.weight_decay;
  return std::make_unique<ddp::Sgd>(model, s);
}

StepStats apply_loss(Loss loss, const ddp::ExecContext& ctx, const float* y,
                     const ddp::Shape& y_shape, const Target& t, float* grad,
                     float scale) {
  const std::int64_t rows = y_shape.at(0), count = ddp::element_count(y_shape);
  const std::int64_t classes = count / rows;
  StepStats s;
  s.rows = static_cast<std::uint64_t>(rows);
  if (loss == Loss::kMse) {
    s.loss_sum = ddp::mse_loss(ctx, y, t.values, grad, count) * static_cast<double>(rows);
  } else {
    s.loss_sum = ddp::cross_entropy_loss(ctx, y, t.labels, grad, rows, classes) *
                 static_cast<double>(rows);
    std::vector<float> logits(static_cast<std::size_t>(count));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
    ddp::detail::copy_bytes(ctx.device, logits.data(), y, logits.size() * sizeof(float),
                            ddp::detail::CopyKind::kDeviceToHost);
    ddp::detail::copy_bytes(ctx.device, labels.data(), t.labels,
                            labels.size() * sizeof(std::int32_t),
                            ddp::detail::CopyKind::kDeviceToHost);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = logits.data() + r * classes;
      if (std::max_element(row, row + classes) - row ==
          labels[static_cast<std::size_t>(r)])
        ++s.correct;
    }
  }
  if (scale != 1.0f) {
    if (ctx.on_gpu()) throw ConfigError("scaled losses are computed on the CPU only");
    for (std::int64_t i = 0; i < count; ++i) grad[i] *= scale;
  }
  return s;
}

}  // namespace seedloader::train
