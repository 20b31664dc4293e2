// DataParallelModel: the single-process DataParallel mode (see train_model.h). One
// replica per entry of --devices, all on the CPU (a machine without GPUs has no
// other devices; GPU replicas are not built). A step scatters the batch along dim 0
// in contiguous slices (sizes differ by at most one row, as torch's scatter), runs
// each replica's forward, loss and backward on its own thread, sums the gradients
// into replica 0, steps replica 0's optimizer and copies its weights to the others.
// Each slice's loss gradient is scaled by its share of the rows, so the sum is the
// gradient of the mean loss over the whole batch.
// Owns the replicas; threads live only inside step(). Not thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "tools/ddp_train/train_model.h"

namespace seedloader::train {

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
};

}  // namespace seedloader::train
