// Losses: mean squared error and softmax cross-entropy, both means (PyTorch's
// default reduction="mean"). Each returns the loss value on the host and writes
// d loss / d prediction into `grad` (same device and size as the prediction).
// Thread-safe on distinct buffers.
#pragma once

#include <cstdint>

#include "seedloader/ddp/gpu_context.h"

namespace seedloader::ddp {

// mean((y - target)^2) over `count` elements.
float mse_loss(const ExecContext& ctx, const float* y, const float* target, float* grad,
               int64_t count);

// mean over n rows of -log softmax(logits[row])[labels[row]].
// REQUIRES: 0 <= labels[i] < classes (checked on the CPU path).
float cross_entropy_loss(const ExecContext& ctx, const float* logits,
                         const int32_t* labels, float* grad, int64_t n, int64_t classes);

}  // namespace seedloader::ddp
