// Small models and deterministic data shared by the DDP tests: an MLP (MSE) and a
// conv net (cross-entropy), and full batches generated from a seed so every rank
// can carve out its own rows and a reference can use all of them.
#pragma once

#include <memory>
#include <vector>

#include "seedloader/ddp/layers.h"
#include "seedloader/ddp/sequential.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"

namespace seedloader::ddp::testing_models {

inline std::unique_ptr<Sequential> mlp(std::uint64_t seed, int64_t hidden = 16) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Linear>(8, hidden));
  layers.push_back(std::make_unique<ReLU>());
  layers.push_back(std::make_unique<Linear>(hidden, 16));
  layers.push_back(std::make_unique<ReLU>());
  layers.push_back(std::make_unique<Linear>(16, 4));
  Rng rng{SeedSequence(seed)};
  return std::make_unique<Sequential>(std::move(layers), Device::kCpu, rng);
}

inline std::unique_ptr<Sequential> convnet(std::uint64_t seed) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Conv2d>(1, 4, 3, 1, 1));
  layers.push_back(std::make_unique<ReLU>());
  layers.push_back(std::make_unique<MaxPool2d>(2));
  layers.push_back(std::make_unique<Flatten>());
  layers.push_back(std::make_unique<Linear>(4 * 4 * 4, 3));
  Rng rng{SeedSequence(seed)};
  return std::make_unique<Sequential>(std::move(layers), Device::kCpu, rng);
}

struct Batch {
  std::vector<float> x;
  std::vector<float> y;         // regression targets (MLP)
  std::vector<int32_t> labels;  // classes (conv net)
  Shape x_shape;
};

// `rows` samples for step `step`; rows [r*B, (r+1)*B) are rank r's share.
inline Batch make_batch(bool conv, int64_t rows, int step) {
  Rng rng{SeedSequence(1000 + static_cast<std::uint64_t>(step))};
  Batch b;
  const int64_t features = conv ? 64 : 8;
  b.x.resize(static_cast<std::size_t>(rows * features));
  for (auto& v : b.x) v = static_cast<float>(normal(rng));
  if (conv) {
    b.labels.resize(static_cast<std::size_t>(rows));
    for (auto& l : b.labels) l = static_cast<int32_t>(bounded(rng, 3));
    b.x_shape = {rows, 1, 8, 8};
  } else {
    b.y.resize(static_cast<std::size_t>(rows * 4));
    for (auto& v : b.y) v = static_cast<float>(normal(rng));
    b.x_shape = {rows, 8};
  }
  return b;
}

// Rows [begin, begin + count) of a batch.
inline Batch slice(const Batch& full, bool conv, int64_t begin, int64_t count) {
  Batch b;
  const int64_t features = conv ? 64 : 8;
  b.x.assign(full.x.begin() + begin * features,
             full.x.begin() + (begin + count) * features);
  if (conv) {
    b.labels.assign(full.labels.begin() + begin, full.labels.begin() + begin + count);
    b.x_shape = {count, 1, 8, 8};
  } else {
    b.y.assign(full.y.begin() + begin * 4, full.y.begin() + (begin + count) * 4);
    b.x_shape = {count, 8};
  }
  return b;
}

}  // namespace seedloader::ddp::testing_models
