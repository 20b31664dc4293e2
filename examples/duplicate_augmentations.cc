// The seed bug made visible, after the well-known PyTorch demonstration: a dataset
// whose samples are three random numbers, read by 4 workers in batches of 2.
//
// With naive seeding the dataset draws from a generator it owns; every forked
// worker gets a copy of the parent's, so every worker produces the same numbers
// (and so would every epoch and every rank). With seedloader's seeding the
// dataset draws from the stream the loader hands it, derived from (seed, epoch,
// rank, worker), and every batch differs.
//
//   ./examples/duplicate_augmentations
#include <cstdio>

#include "seedloader/data_loader.h"
#include "seedloader/random.h"

namespace {

using namespace seedloader;

class ThreeRandomNumbers final : public Dataset {
 public:
  // own_generator: ignore the loader's stream and draw from a generator made here,
  // in the parent, the way many PyTorch datasets hold an np.random.default_rng.
  explicit ThreeRandomNumbers(bool own_generator)
      : own_generator_(own_generator),
        layout_({{"x", DType::kF32, {3}, false}}),
        own_(SeedSequence(0)) {}

  std::uint64_t size() const override { return 16; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t, Rng& rng, SampleWriter& out) const override {
    Rng& use = own_generator_ ? own_ : rng;
    for (float& v : out.field<float>(0)) v = uniform_float(use);
  }
  std::string describe() const override { return "ThreeRandomNumbers"; }

 private:
  bool own_generator_;
  SampleLayout layout_;
  mutable Rng own_;  // each worker process changes only its own copy
};

void show(const char* title, bool own_generator) {
  ThreeRandomNumbers dataset(own_generator);
  LoaderOptions options;
  options.batch_size = 2;
  options.num_workers = 4;
  options.seed = 42;
  DataLoader loader(dataset, options);
  std::printf("%s\n", title);
  for (const Batch& batch : loader) {
    auto x = batch.tensor("x").values<float>();
    std::printf("  batch %llu (worker %d):",
                static_cast<unsigned long long>(batch.number()), batch.worker());
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::printf("  [%.4f %.4f %.4f]", x[3 * i], x[3 * i + 1], x[3 * i + 2]);
    }
    std::printf("\n");
  }
}

}  // namespace

int main() {
  show("naive seeding: every worker copies the parent's generator", true);
  show("seedloader seeding: one stream per (seed, epoch, rank, worker)", false);
  return 0;
}
