#include "tools/ddp_train/train_model.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "seedloader/ddp/loss.h"
#include "seedloader/error.h"

namespace seedloader::train {

std::string shifted_name(const std::string& local, int shift) {
  std::size_t dot = local.find('.');
  if (shift == 0 || dot == std::string::npos) return local;
  return std::to_string(std::stoi(local.substr(0, dot)) + shift) + local.substr(dot);
}

namespace {

ddp::SgdOptions sgd_options(const TrainOptions& o) {
  ddp::SgdOptions s;
  s.lr = o.lr;
  s.momentum = o.momentum;
  s.weight_decay = o.weight_decay;
  return s;
}

ddp::AdamWOptions adamw_options(const TrainOptions& o) {
  ddp::AdamWOptions a;
  a.lr = o.lr;
  a.weight_decay = o.weight_decay;
  return a;
}

}  // namespace

std::unique_ptr<ddp::Optimizer> make_optimizer(const TrainOptions& o,
                                               ddp::Sequential& model) {
  if (o.optimizer == Optimizer::kAdamW)
    return std::make_unique<ddp::AdamW>(model, adamw_options(o));
  return std::make_unique<ddp::Sgd>(model, sgd_options(o));
}

std::string optimizer_json(const TrainOptions& o) {
  nlohmann::json j;
  if (o.optimizer == Optimizer::kAdamW) {
    const ddp::AdamWOptions a = adamw_options(o);
    j = {{"name", "adamw"},
         {"lr", a.lr},
         {"betas", {a.beta1, a.beta2}},
         {"eps", a.eps},
         {"weight_decay", a.weight_decay},
         {"amsgrad", false}};
  } else {
    const ddp::SgdOptions s = sgd_options(o);
    // Widened exactly: torch rounds a Python float back to the parameters' float32.
    j = {{"name", "sgd"},
         {"lr", static_cast<double>(s.lr)},
         {"momentum", static_cast<double>(s.momentum)},
         {"dampening", static_cast<double>(s.dampening)},
         {"weight_decay", static_cast<double>(s.weight_decay)},
         {"nesterov", s.nesterov}};
  }
  return j.dump();
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
