// The data side of ddp-train: opening --data (seed-audit's KIND:ARG specs plus
// tensors:FILE.safetensors) and turning a loader Batch into model inputs on the host.
// Field 0 is the input (float32 used in place; uint8 and float64 converted), field 1
// the target: integer labels (xent, converted to int32) or float32 values (mse).
// HostInputs owns only the converted copies; it must not outlive its Batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddp/layer.h"
#include "loader/batch.h"
#include "loader/dataset.h"
#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

// Throws ConfigError for a bad spec, DataError for unreadable data.
std::unique_ptr<Dataset> open_train_data(const std::string& spec,
                                         const std::string& transform);

// Checks the dataset fits the loss (two fields, target of the right kind); returns
// one sample's input shape. Throws ConfigError naming the field.
ddp::Shape check_fields(const Dataset& data, const std::string& loss);

// Field 1 as int32 labels, converted from any integer dtype.
std::vector<std::int32_t> labels_of(const TensorView& t);

struct HostInputs {
  const float* x = nullptr;
  ddp::Shape x_shape;
  Target target;
  std::vector<float> x_copy, y_copy;
  std::vector<std::int32_t> labels;
};

// REQUIRES: check_fields() accepted the batch's dataset.
void host_inputs(const Batch& b, const std::string& loss, HostInputs& out);

}  // namespace seedloader::train
