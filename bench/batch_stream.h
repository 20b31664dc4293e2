// BatchStream: an endless run of batches from a DataLoader for the loader
// benches, epoch after epoch, so a timed loop can take one batch per iteration.
// The batch returned by next() stays valid until the following next().
#pragma once

#include <optional>

#include "seedloader/data_loader.h"

namespace seedloader {

class BatchStream {
 public:
  explicit BatchStream(DataLoader& loader) : loader_(loader) {}

  const Batch& next() {
    if (it_) ++*it_;  // hands the previous batch's slot back
    if (!it_ || *it_ == loader_.end()) {
      it_.reset();
      loader_.set_epoch(epoch_++);
      it_.emplace(loader_.begin());
    }
    return **it_;
  }

 private:
  DataLoader& loader_;
  std::uint64_t epoch_ = 0;
  std::optional<DataLoader::Iterator> it_;
};

}  // namespace seedloader
