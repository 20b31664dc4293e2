#include "tools/ddp_train/data_parallel_model.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>

#include "seedloader/seed_sequence.h"
#include "tools/ddp_train/model_spec.h"

namespace seedloader::train {

DataParallelModel::DataParallelModel(const TrainOptions& o, const ddp::Shape& sample,
                                     std::uint64_t seed)
    : loss_(o.loss) {
  for (std::size_t r = 0; r < o.devices.size(); ++r) {
    Rng rng{SeedSequence(seed, {3})};  // every replica starts from the same weights
    replicas_.push_back(std::make_unique<ddp::Sequential>(build_layers(o.model, sample),
                                                          ddp::Device::kCpu, rng));
  }
  grads_.resize(replicas_.size());
  optimizer_ = make_optimizer(o, *replicas_[0]);
}

std::vector<std::int64_t> chunk_sizes(std::int64_t rows, std::int64_t parts) {
  const std::int64_t each = (rows + parts - 1) / parts;
  std::vector<std::int64_t> sizes;
  for (std::int64_t left = rows; left > 0; left -= each)
    sizes.push_back(std::min(each, left));
  return sizes;
}

StepStats DataParallelModel::step(const float* x, const ddp::Shape& x_shape,
                                  const Target& t) {
  const std::int64_t rows = x_shape[0];
  const std::vector<std::int64_t> sizes =
      chunk_sizes(rows, static_cast<std::int64_t>(replicas_.size()));
  const std::int64_t parts = static_cast<std::int64_t>(sizes.size());
  if (std::find(announced_rows_.begin(), announced_rows_.end(), rows) ==
      announced_rows_.end()) {
    announced_rows_.push_back(rows);
    std::string split;
    for (std::int64_t n : sizes) split += (split.empty() ? "" : ",") + std::to_string(n);
    std::printf(
        "ddp-train: --mode dp splits a batch of %lld rows as torch.chunk does: %s "
        "(%lld of %zu replicas)\n",
        static_cast<long long>(rows), split.c_str(), static_cast<long long>(parts),
        replicas_.size());
  }
  const std::int64_t row_elems = ddp::element_count(x_shape) / rows;
  std::vector<StepStats> stats(static_cast<std::size_t>(parts));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(parts));
  std::vector<std::thread> threads;
  std::int64_t begin = 0;
  for (std::int64_t p = 0; p < parts; ++p) {
    const std::int64_t n = sizes[static_cast<std::size_t>(p)];
    threads.emplace_back([&, p, begin, n] {
      try {
        ddp::Sequential& m = *replicas_[static_cast<std::size_t>(p)];
        m.zero_grad();
        ddp::Shape shape = x_shape;
        shape[0] = n;
        const float* y = m.forward(x + begin * row_elems, shape);
        const std::int64_t out_elems = ddp::element_count(m.output_shape()) / n;
        Target slice;
        if (t.values) slice.values = t.values + begin * out_elems;
        if (t.labels) slice.labels = t.labels + begin;
        ddp::DeviceArray<float>& g = grads_[static_cast<std::size_t>(p)];
        g.resize(static_cast<std::size_t>(n * out_elems));
        stats[static_cast<std::size_t>(p)] =
            apply_loss(loss_, m.context(), y, m.output_shape(), slice, g.data(),
                       static_cast<float>(n) / static_cast<float>(rows));
        m.backward(g.data());
      } catch (...) {
        errors[static_cast<std::size_t>(p)] = std::current_exception();
      }
    });
    begin += n;
  }
  for (auto& th : threads) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  StepStats total;
  std::span<float> g0 = replicas_[0]->gradients();
  for (std::int64_t p = 0; p < parts; ++p) {
    const StepStats& s = stats[static_cast<std::size_t>(p)];
    total.loss_sum += s.loss_sum;
    total.correct += s.correct;
    total.rows += s.rows;
    if (p == 0) continue;
    std::span<float> g = replicas_[static_cast<std::size_t>(p)]->gradients();
    for (std::size_t i = 0; i < g0.size(); ++i) g0[i] += g[i];
  }
  optimizer_->step();
  sync_copies();
  return total;
}

void DataParallelModel::sync_copies() {
  std::span<const float> w = replicas_[0]->parameters();
  for (std::size_t r = 1; r < replicas_.size(); ++r) replicas_[r]->load_parameters(w);
}

}  // namespace seedloader::train
