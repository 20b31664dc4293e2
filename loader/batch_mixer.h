// BatchMixer: BatchMix (batch_mix.h) checked against a dataset's layout once, then
// applied to filled slots by whoever fills them (a worker, or the consumer when
// num_workers = 0). Immutable after construction; safe to share across fork.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loader/shared_layout.h"
#include "seedloader/batch_mix.h"
#include "seedloader/sample_layout.h"

namespace seedloader {

class BatchMixer {
 public:
  // Throws ConfigError naming the option or field: a missing or variable-size
  // image or label field, an image that is not CHW/HW, MixUp on an integer
  // image, a label that is not an integer scalar, num_classes < 1, or a target
  // name the dataset already uses.
  BatchMixer(BatchMix mix, const SampleLayout& dataset_layout);

  // The dataset's fields followed by the float32 [num_classes] target.
  const SampleLayout& layout() const { return layout_; }

  // Mixes rows [0, count) of a filled slot in place and writes the targets. Row 0
  // is paired with row count - 1, or with row `count` when `partner_row` (the
  // sample before it in a global batch spread over ranks, left as it is).
  // Throws DataError naming the sample whose label is outside [0, num_classes).
  void apply(std::byte* slot, const SlotGeometry& geometry, std::uint64_t base_seed,
             std::uint64_t epoch, std::uint64_t rank, std::uint64_t batch,
             std::uint64_t count, bool partner_row = false) const;

 private:
  BatchMix mix_;
  SampleLayout layout_;
  std::size_t image_ = 0;
  std::size_t label_ = 0;
  std::int64_t height_ = 0;
  std::int64_t width_ = 0;
};

}  // namespace seedloader
