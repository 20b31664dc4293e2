// BatchFeed: the loader's batches as model inputs on the model's device, one epoch
// at a time. HostFeed iterates the DataLoader and uses each batch in place in its
// shared-memory slot (converting only non-float32 fields); DeviceFeed (CUDA builds)
// takes them through the loader's DevicePrefetcher, so batch k+1 is copied while
// batch k trains. Inputs stay valid until the next call to next() or start().
// An epoch may start at any batch (resuming a run): with per-sample seeding both
// feeds start the loader there (DataLoader::resume, through the prefetcher on the
// device) and the batches are those of a full epoch; with worker seeding the
// earlier batches are loaded and discarded, since the worker streams must advance
// as they did.
// Not thread-safe; owns no data beyond the current batch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "seedloader/cuda_types.h"
#include "seedloader/data_loader.h"
#include "tools/ddp_train/train_data.h"

namespace seedloader::train {

struct StepInputs {
  const float* x = nullptr;
  ddp::Shape x_shape;
  Target target;
  const Batch* batch = nullptr;  // the loader's host view (indices, fingerprints)
};

class BatchFeed {
 public:
  virtual ~BatchFeed() = default;
  // The next next() returns batch `first` of `epoch` (abandoning an unfinished
  // epoch).
  void start(std::uint64_t epoch, std::uint64_t first = 0) {
    replay_ = open(epoch, first);
  }
  // The next batch of the epoch, or nullptr after the last.
  const StepInputs* next() {
    for (;;) {
      const StepInputs* in = fetch();
      if (!in || in->batch->number() >= replay_) return in;
    }
  }

 protected:
  // Starts `epoch` at batch `first` or before it; returns the batch number below
  // which fetch() delivers batches to discard (0: none), so that the first batch
  // next() returns is `first` or the first not skipped after it.
  virtual std::uint64_t open(std::uint64_t epoch, std::uint64_t first) = 0;
  virtual const StepInputs* fetch() = 0;

 private:
  std::uint64_t replay_ = 0;
};

// `classes` (xent: the model's outputs) bounds the labels and `who` names the
// dataset in the DataError a label outside [0, classes) raises (see labels_of).
std::unique_ptr<BatchFeed> make_host_feed(DataLoader& loader, Loss loss,
                                          std::int64_t classes, std::string who);

#ifdef SEEDLOADER_HAS_CUDA
// REQUIRES: `loader` outlives the feed; `stream` is the model's compute stream.
std::unique_ptr<BatchFeed> make_device_feed(DataLoader& loader, Loss loss,
                                            std::int64_t classes, std::string who,
                                            int device, cudaStream_t stream);
#endif

}  // namespace seedloader::train
