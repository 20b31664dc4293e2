// consumer: a program built against an installed seedloader. It parses a transform
// spec, loads a synthetic image dataset with two forked workers, and checks what a
// user relies on: every sample once per epoch, batches of the requested shape, and
// the worker streams numpy gives for the same keys.
#include <cstdio>
#include <exception>
#include <set>

#include "seedloader/data_loader.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/derive.h"
#include "seedloader/transforms/spec.h"

int main() {
  try {
    // numpy: PCG64(SeedSequence(42, spawn_key=(1, 2, 3))).random_raw()
    seedloader::Pcg64Stream stream = seedloader::stream_for_key(42, {1, 2, 3});
    if (stream.next_u64() != 0x735ca24a6ff4a80eULL) {
      std::fprintf(stderr, "consumer: stream (42; 1, 2, 3) does not match numpy\n");
      return 1;
    }
    seedloader::Synthetic data(96, 40, 48, 3,
                               seedloader::parse_transform_spec("rrc:32,hflip"));
    seedloader::LoaderOptions opt;
    opt.batch_size = 16;
    opt.num_workers = 2;
    opt.shuffle = true;
    opt.seed = 7;
    seedloader::DataLoader loader(data, opt);
    std::set<std::uint64_t> seen;
    int batches = 0;
    for (const seedloader::Batch& b : loader) {
      seedloader::TensorView image = b.tensor("image");
      if (image.shape != std::vector<std::int64_t>{16, 3, 32, 32}) {
        std::fprintf(stderr, "consumer: batch %d has the wrong image shape\n", batches);
        return 1;
      }
      for (std::uint64_t i : b.indices()) seen.insert(i);
      ++batches;
    }
    if (batches != 6 || seen.size() != 96) {
      std::fprintf(stderr, "consumer: %d batches, %zu distinct samples\n", batches,
                   seen.size());
      return 1;
    }
    std::printf("consumer: 6 batches of [16, 3, 32, 32], 96 distinct samples\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 2;
  }
  return 0;
}
