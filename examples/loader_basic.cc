// loader_basic: the DataLoader loop of docs/cpp.md, on a synthetic dataset.
//   loader_basic [epochs] [rank] [world_size]
// Prints, per epoch, the batches and samples seen and the first batch's
// indices and fingerprints; run it twice to see identical output.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "seedloader/data_loader.h"
#include "seedloader/stream_probe_dataset.h"

int main(int argc, char** argv) {
  const int E = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::uint64_t r = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  const std::uint64_t R = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  try {
    seedloader::StreamProbeDataset dataset(1000,
                                           16);  // "value" f32 [16], "index", "draw"

    // clang-format off
    seedloader::LoaderOptions opt;
    opt.batch_size = 64; opt.num_workers = 4; opt.prefetch = 2;
    opt.shuffle = true; opt.seed = 1234; opt.drop_last = true;
    opt.persistent_workers = true;           // or fork per epoch
    opt.rank = r; opt.world_size = R;        // uses DistributedSampler when R > 1
    seedloader::DataLoader loader(dataset, opt);
    // clang-format on
    for (int epoch = 0; epoch < E; ++epoch) {
      loader.set_epoch(epoch);
      std::uint64_t batches = 0, samples = 0;
      for (const seedloader::Batch& b : loader) {
        seedloader::TensorView value = b.tensor("value");  // [64, 16] f32
        if (batches == 0) {
          std::printf("epoch %d batch 0: value shape [%lld, %lld], first indices", epoch,
                      static_cast<long long>(value.shape[0]),
                      static_cast<long long>(value.shape[1]));
          for (int i = 0; i < 4; ++i) {
            std::printf(" %llu", static_cast<unsigned long long>(b.indices()[i]));
          }
          std::printf(", first fingerprint %016llx\n",
                      static_cast<unsigned long long>(b.fingerprints()[0]));
        }
        ++batches;
        samples += b.size();
      }
      std::printf("epoch %d: %llu batches, %llu samples on rank %llu of %llu\n", epoch,
                  static_cast<unsigned long long>(batches),
                  static_cast<unsigned long long>(samples),
                  static_cast<unsigned long long>(r), static_cast<unsigned long long>(R));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_basic: %s\n", e.what());
    return 2;
  }
  return 0;
}
