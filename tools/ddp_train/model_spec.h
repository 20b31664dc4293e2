// Models named on the command line, built as ddp layers:
//   mlp:IN,H1,...,OUT   Linear(IN,H1), ReLU, ..., Linear(Hk,OUT) (a Flatten first when
//                       the input is not a vector: names shift by one, as in PyTorch)
//   cnn:small[:CLASSES] Conv2d(C,16,3,p1), ReLU, MaxPool2d(2), Conv2d(16,32,3,p1), ReLU,
//                       MaxPool2d(2), Flatten, Linear(32*(H/4)*(W/4), CLASSES=10)
// The input shape is one sample's ([F] or [C, H, W]).
// Parameter names and shapes are those of the equivalent nn.Sequential, which the
// docs/training.md gives as Python code (python/tests/test_checkpoint.py runs that code
// and loads checkpoints of each spec into it strictly).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "seedloader/ddp/layer.h"

namespace seedloader::train {

// Throws ConfigError naming the spec when it is malformed or does not fit `sample`.
std::vector<std::unique_ptr<ddp::Layer>> build_layers(const std::string& spec,
                                                      const ddp::Shape& sample);

}  // namespace seedloader::train
