// epoch_bytes(): what a loader delivers over one epoch, sample by sample, for
// tests that compare epochs across worker counts, sources and resumes.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "seedloader/data_loader.h"

namespace seedloader::testing_util {

// Sample index -> the bytes of every field of that sample, in layout order.
using EpochBytes = std::map<std::uint64_t, std::vector<std::byte>>;

// Iterates the epoch `loader` starts next (set_epoch() or resume() chose it);
// a sample delivered twice fails the calling test.
inline EpochBytes epoch_bytes(DataLoader& loader, const SampleLayout& layout) {
  EpochBytes out;
  for (const Batch& b : loader) {
    for (std::uint64_t s = 0; s < b.size(); ++s) {
      std::vector<std::byte> bytes;
      for (std::size_t f = 0; f < layout.num_fields(); ++f) {
        const TensorView t = b.tensor(layout.field(f).name);
        const std::size_t row = t.bytes() / b.size();
        bytes.insert(bytes.end(), t.data + s * row, t.data + (s + 1) * row);
      }
      EXPECT_TRUE(out.emplace(b.indices()[s], std::move(bytes)).second)
          << "sample " << b.indices()[s] << " delivered twice";
    }
  }
  return out;
}

}  // namespace seedloader::testing_util
