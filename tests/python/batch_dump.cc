// batch_dump: the C++ side of the Python package's equivalence test. Runs a
// DataLoader over Synthetic with the options given and writes every batch's
// fields, in field order, as raw bytes to stdout; python/tests compares the
// Python loader's tensors to them byte for byte.
// Usage: batch_dump N H W C SPEC BATCH WORKERS SEED SEEDING(worker|sample)
//                   SHUFFLE(0|1) DROP_LAST(0|1) RANK WORLD EPOCHS
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "seedloader/data_loader.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/transforms/spec.h"

int main(int argc, char** argv) {
  if (argc != 15) {
    std::fprintf(stderr,
                 "usage: batch_dump N H W C SPEC BATCH WORKERS SEED SEEDING "
                 "SHUFFLE DROP_LAST RANK WORLD EPOCHS\n");
    return 2;
  }
  auto num = [&](int i) { return std::strtoull(argv[i], nullptr, 10); };
  try {
    const std::string spec = argv[5];
    seedloader::Synthetic ds(
        num(1), static_cast<int>(num(2)), static_cast<int>(num(3)),
        static_cast<int>(num(4)),
        spec.empty() ? seedloader::Compose() : seedloader::parse_transform_spec(spec));
    seedloader::LoaderOptions o;
    o.batch_size = num(6);
    o.num_workers = static_cast<int>(num(7));
    o.seed = num(8);
    o.seeding = std::string(argv[9]) == "sample" ? seedloader::SeedScope::kSample
                                                 : seedloader::SeedScope::kWorker;
    o.shuffle = num(10) != 0;
    o.drop_last = num(11) != 0;
    o.rank = num(12);
    o.world_size = num(13);
    seedloader::DataLoader loader(ds, o);
    for (std::uint64_t e = 0; e < num(14); ++e) {
      loader.set_epoch(e);
      for (const seedloader::Batch& b : loader) {
        for (std::size_t f = 0; f < b.num_fields(); ++f) {
          seedloader::TensorView v = b.tensor(f);
          std::fwrite(v.data, 1, v.bytes(), stdout);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "batch_dump: %s\n", e.what());
    return 1;
  }
  return 0;
}
