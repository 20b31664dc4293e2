#include "tools/ddp_train/batch_feed.h"

#include "seedloader/error.h"

#ifdef SEEDLOADER_HAS_CUDA
#include "seedloader/device_prefetcher.h"
#endif

namespace seedloader::train {
namespace {

class HostFeed final : public BatchFeed {
 public:
  HostFeed(DataLoader& loader, Loss loss, std::int64_t classes, std::string who)
      : loader_(loader), loss_(loss), classes_(classes), who_(std::move(who)) {}

  std::uint64_t open(std::uint64_t epoch, std::uint64_t first) override {
    it_.reset();  // abandons an unfinished epoch
    fresh_ = true;
    if (loader_.options().seeding == SeedScope::kSample) {
      loader_.resume(epoch, first);
      return 0;
    }
    loader_.set_epoch(epoch);
    return first;
  }
  const StepInputs* fetch() override {
    if (fresh_) {
      it_.emplace(loader_.begin());
      fresh_ = false;
    } else if (it_ && *it_ != loader_.end()) {
      ++*it_;
    }
    if (!it_ || *it_ == loader_.end()) return nullptr;
    host_inputs(**it_, loss_, classes_, who_, host_);
    in_.x = host_.x;
    in_.x_shape = host_.x_shape;
    in_.target = host_.target;
    in_.batch = &**it_;
    return &in_;
  }

 private:
  DataLoader& loader_;
  Loss loss_;
  std::int64_t classes_;
  std::string who_;
  std::optional<DataLoader::Iterator> it_;
  bool fresh_ = false;
  HostInputs host_;
  StepInputs in_;
};

#ifdef SEEDLOADER_HAS_CUDA
class DeviceFeed final : public BatchFeed {
 public:
  DeviceFeed(DataLoader& loader, Loss loss, std::int64_t classes, std::string who,
             int device, cudaStream_t stream)
      : loss_(loss),
        classes_(classes),
        who_(std::move(who)),
        loader_(loader),
        prefetcher_(loader, device, stream),
        labels_(ddp::Device::kCuda, 0) {}

  std::uint64_t open(std::uint64_t epoch, std::uint64_t first) override {
    const bool exact = loader_.options().seeding == SeedScope::kSample;
    prefetcher_.start_epoch(epoch, exact ? first : 0);
    return exact ? 0 : first;
  }
  const StepInputs* fetch() override {
    const DeviceBatch* b = prefetcher_.next();
    if (!b) return nullptr;
    TensorView x = b->host.tensor(std::size_t{0});
    if (x.dtype != DType::kF32)
      throw ConfigError("the GPU path trains on float32 inputs; field '" + x.name +
                        "' is " + dtype_name(x.dtype) +
                        " (add a totensor/normalize step)");
    in_.x = static_cast<const float*>(b->fields[0]);
    in_.batch = &b->host;
    in_.x_shape.assign(x.shape.begin(), x.shape.end());
    if (in_.x_shape.size() == 1) in_.x_shape.push_back(1);
    in_.target = Target();
    if (loss_ == Loss::kXent) {
      std::vector<std::int32_t> host =
          labels_of(b->host.tensor(std::size_t{1}), b->host.indices(), classes_, who_);
      labels_.copy_from_host(host);
      in_.target.labels = labels_.data();
    } else {
      in_.target.values = static_cast<const float*>(b->fields[1]);
    }
    return &in_;
  }

 private:
  Loss loss_;
  std::int64_t classes_;
  std::string who_;
  const DataLoader& loader_;
  DevicePrefetcher prefetcher_;
  ddp::DeviceArray<std::int32_t> labels_;
  StepInputs in_;
};
#endif

}  // namespace

std::unique_ptr<BatchFeed> make_host_feed(DataLoader& loader, Loss loss,
                                          std::int64_t classes, std::string who) {
  return std::make_unique<HostFeed>(loader, loss, classes, std::move(who));
}

#ifdef SEEDLOADER_HAS_CUDA
std::unique_ptr<BatchFeed> make_device_feed(DataLoader& loader, Loss loss,
                                            std::int64_t classes, std::string who,
                                            int device, cudaStream_t stream) {
  return std::make_unique<DeviceFeed>(loader, loss, classes, std::move(who), device,
                                      stream);
}
#endif

}  // namespace seedloader::train
