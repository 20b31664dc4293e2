// The data side of ddp-train: opening --data (seed-audit's KIND:ARG specs plus
// tensors:FILE.safetensors) and turning a loader Batch into model inputs on the host.
// Field 0 is the input (float32 used in place; uint8 and float64 converted), field 1
// the target: integer labels (xent, converted to int32) or float32 values (mse).
// HostInputs owns only the converted copies; it must not outlive its Batch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seedloader/batch.h"
#include "seedloader/dataset.h"
#include "seedloader/ddp/layer.h"
#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

// Throws ConfigError for a bad spec, DataError for unreadable data.
std::unique_ptr<Dataset> open_train_data(const std::string& spec,
                                         const std::string& transform);

// A 64-bit fingerprint of the data set's index, recorded in checkpoints so a resume
// refuses data that changed since the save: XXH64 (seed 0) over describe(), NUL,
// size() as 8 little-endian bytes, then for every regular file the spec names
// (the file itself, every file under a directory, recursively, or every match of a
// tar: glob), sorted by path, its path relative to the spec's argument, NUL, and
// its size as 8 little-endian bytes. Names and sizes, not contents or times: cheap
// (one stat per file, as the index walk already does) and unchanged by copying the
// data to another machine; an image rewritten in place at the same size passes.
// Throws DataError when a file cannot be listed.
std::uint64_t data_fingerprint(const std::string& spec, const Dataset& data);

// Checks the dataset fits the loss (two fields, target of the right kind); returns
// one sample's input shape. Throws ConfigError naming the field.
ddp::Shape check_fields(const Dataset& data, Loss loss);

// The classes a model built from `model_spec` for one sample of shape `sample`
// outputs (the element count of its output for one row).
std::int64_t model_classes(const std::string& model_spec, const ddp::Shape& sample);

// Field 1 (`t`, one label per row) as int32 labels, converted from any integer
// dtype. A label outside [0, classes) -- an int64 one beyond int32 included, never
// truncated -- is a DataError naming `who` (the dataset) and the row's sample index
// (`indices`, the batch's). The loss checks the range too, but only on the CPU and
// after the conversion; on the GPU a bad label would turn into a NaN loss.
std::vector<std::int32_t> labels_of(const TensorView& t,
                                    std::span<const std::uint64_t> indices,
                                    std::int64_t classes, const std::string& who);

struct HostInputs {
  const float* x = nullptr;
  ddp::Shape x_shape;
  Target target;
  std::vector<float> x_copy, y_copy;
  std::vector<std::int32_t> labels;
};

// REQUIRES: check_fields() accepted the batch's dataset. Labels (xent) are
// checked as labels_of() does.
void host_inputs(const Batch& b, Loss loss, std::int64_t classes, const std::string& who,
                 HostInputs& out);

}  // namespace seedloader::train
