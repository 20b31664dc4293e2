// DataParallelModel: the single-process DataParallel mode (see train_model.h). One
// replica per entry of --devices, all on the CPU (a machine without GPUs has no
// other devices; GPU replicas are not built). A step scatters the batch along dim 0
// in contiguous slices as torch's DataParallel does (torch.chunk: slices of
// ceil(rows / replicas) rows, the last one shorter, so a batch may use fewer
// replicas; the sizes are printed once per batch size), runs
// each replica's forward, loss and backward on its own thread, sums the gradients
// into replica 0, steps replica 0's optimizer and copies its weights to the others.
// Each slice's loss gradient is scaled by its share of the rows, so the sum is the
// gradient of the mean loss over the whole batch.
// Owns the replicas; threads live only inside step(). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

// The slice sizes torch.chunk(rows, parts) gives along dim 0: ceil(rows / parts)
// each, the last one what is left; fewer than `parts` slices when they run out.
// REQUIRES: rows >= 1, parts >= 1.
std::vector<std::int64_t> chunk_sizes(std::int64_t rows, std::int64_t parts);

class DataParallelModel final : public TrainModel {
 public:
  DataParallelModel(const TrainOptions& o, const ddp::Shape& sample, std::uint64_t seed);

  StepStats step(const float* x, const ddp::Shape& x_shape, const Target& t) override;
  std::vector<Stage> stages() override {
    return {{replicas_[0].get(), optimizer_.get(), 0}};
  }
  void sync_copies() override;
  ddp::Device device() const override { return ddp::Device::kCpu; }
  std::size_t num_replicas() const { return replicas_.size(); }

 private:
  Loss loss_;
  std::vector<std::unique_ptr<ddp::Sequential>> replicas_;
  std::vector<ddp::DeviceArray<float>> grads_;  // per replica: d loss / d output
  std::unique_ptr<ddp::Optimizer> optimizer_;
  std::vector<std::int64_t> announced_rows_;  // batch sizes whose split was printed
};

}  // namespace seedloader::train
