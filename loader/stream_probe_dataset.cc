#include "seedloader/stream_probe_dataset.h"

#include "seedloader/error.h"
#include "seedloader/random.h"

namespace seedloader {

StreamProbeDataset::StreamProbeDataset(std::uint64_t size, std::int64_t dim)
    : size_(size),
      layout_({{"value", DType::kF32, {dim}, false},
               {"index", DType::kI64, {}, false},
               {"draw", DType::kI64, {}, false}}) {}

void StreamProbeDataset::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  if (index >= size_) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  out.field<std::int64_t>(2)[0] = static_cast<std::int64_t>(rng.next_u64());
  for (float& v : out.field<float>(0)) v = static_cast<float>(index) + uniform_float(rng);
  out.field<std::int64_t>(1)[0] = static_cast<std::int64_t>(index);
}

std::string StreamProbeDataset::describe() const {
  return "StreamProbeDataset(" + std::to_string(size_) + " samples)";
}

}  // namespace seedloader
