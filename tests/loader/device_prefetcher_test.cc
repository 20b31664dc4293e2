// DevicePrefetcher: batches arrive on the GPU intact and in order, with
// workers forked after the region was pinned. Skips without a CUDA device.
#include "seedloader/device_prefetcher.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "seedloader/stream_probe_dataset.h"

namespace seedloader {
namespace {

bool have_device(std::string* why) {
  int n = 0;
  cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    return false;
  }
  if (n == 0) *why = "no CUDA device";
  return n > 0;
}

// 1000 samples in batches of 64 through 2 shuffling workers.
LoaderOptions shuffled_options() {
  LoaderOptions o;
  o.batch_size = 64;
  o.num_workers = 2;
  o.shuffle = true;
  o.seed = 5;
  return o;
}

TEST(DevicePrefetcherTest, DeviceBatchesMatchHostBatchesInOrder) {
  std::string why;
  if (!have_device(&why)) GTEST_SKIP() << why;
  StreamProbeDataset ds(1000, 32);
  LoaderOptions o = shuffled_options();
  o.persistent_workers = false;  // fork after pinning, every epoch
  DataLoader loader(ds, o);
  cudaStream_t compute;
  ASSERT_EQ(cudaStreamCreate(&compute), cudaSuccess);
  {
    DevicePrefetcher prefetcher(loader, 0, compute);
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      prefetcher.start_epoch(epoch);
      std::uint64_t k = 0, samples = 0;
      while (const DeviceBatch* b = prefetcher.next()) {
        EXPECT_EQ(b->host.number(), k++);
        TensorView value = b->host.tensor("value");
        std::vector<float> back(value.bytes() / sizeof(float));
        ASSERT_EQ(cudaMemcpyAsync(back.data(), b->fields[0], value.bytes(),
                                  cudaMemcpyDeviceToHost, compute),
                  cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
        auto host = value.values<float>();
        ASSERT_TRUE(std::equal(back.begin(), back.end(), host.begin()))
            << "batch " << b->host.number();
        samples += b->host.size();
      }
      EXPECT_EQ(samples, 1000u);
      EXPECT_EQ(k, loader.num_batches());
    }
  }
  cudaStreamDestroy(compute);
}

// Starting at batch 5 delivers batches 5, 6, ... of the epoch, loading none before
// (the resume of a run with per-sample seeding).
TEST(DevicePrefetcherTest, StartsAnEpochAtAGivenBatch) {
  std::string why;
  if (!have_device(&why)) GTEST_SKIP() << why;
  StreamProbeDataset ds(1000, 32);
  LoaderOptions o = shuffled_options();
  o.seeding = SeedScope::kSample;
  DataLoader loader(ds, o);
  std::vector<std::vector<std::uint64_t>> whole;
  loader.set_epoch(1);
  for (const Batch& b : loader)
    whole.emplace_back(b.indices().begin(), b.indices().end());
  DevicePrefetcher prefetcher(loader, 0);
  prefetcher.start_epoch(1, 5);
  std::uint64_t k = 5;
  while (const DeviceBatch* b = prefetcher.next()) {
    ASSERT_LT(k, whole.size());
    EXPECT_EQ(b->host.number(), k);
    EXPECT_EQ(
        std::vector<std::uint64_t>(b->host.indices().begin(), b->host.indices().end()),
        whole[k]);
    ++k;
  }
  EXPECT_EQ(k, whole.size());
}

}  // namespace
}  // namespace seedloader
