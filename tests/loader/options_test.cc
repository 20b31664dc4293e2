// LoaderOptions validation and the in-memory dataset.
#include <gtest/gtest.h>

#include "seedloader/data_loader.h"
#include "seedloader/in_memory_dataset.h"
#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

TEST(InMemoryDatasetTest, LoaderDeliversTheStoredRows) {
  InMemoryDataset ds(SampleLayout({{"x", DType::kI32, {2}, false}}), 5);
  auto x = ds.field<std::int32_t>(0);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int32_t>(i * 3);
  LoaderOptions o;
  o.batch_size = 5;
  o.num_workers = 1;
  o.seed = 1;
  DataLoader loader(ds, o);
  int batches = 0;
  for (const Batch& b : loader) {
    auto v = b.tensor("x").values<std::int32_t>();
    ASSERT_EQ(v.size(), 10u);
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<int>(i * 3));
    ++batches;
  }
  EXPECT_EQ(batches, 1);
  EXPECT_THROW(ds.field<float>(0), ConfigError);
}

TEST(LoaderOptionsTest, UnsetSeedIsDrawnAndReported) {
  StreamProbeDataset ds(4, 1);
  LoaderOptions o;
  DataLoader a(ds, o);
  DataLoader b(ds, o);
  EXPECT_NE(a.base_seed(), b.base_seed());
  EXPECT_EQ(a.options().seed, a.base_seed());
}

}  // namespace
}  // namespace seedloader
