// Fault 11: invalid options are a ConfigError at construction, naming the
// option, before any worker is forked.
#include <functional>

#include "seedloader/data_loader.h"
#include "seedloader/stream_probe_dataset.h"
#include "tests/fault/fault_fixture.h"

namespace seedloader {
namespace {

using testing_util::FaultTest;

void expect_config_error(const Dataset& ds,
                         const std::function<void(LoaderOptions&)>& edit,
                         const std::string& mentions) {
  LoaderOptions o;
  o.seed = 1;
  o.num_workers = 2;
  edit(o);
  try {
    DataLoader loader(ds, o);
    ADD_FAILURE() << "accepted; expected an error mentioning " << mentions;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST_F(FaultTest, InvalidOptionsAreConfigErrorsAtConstruction) {
  StreamProbeDataset ds(10, 1);
  expect_config_error(
      ds, [](LoaderOptions& o) { o.batch_size = 0; }, "batch_size");
  expect_config_error(
      ds, [](LoaderOptions& o) { o.prefetch = 0; }, "prefetch");
  expect_config_error(
      ds, [](LoaderOptions& o) { o.num_workers = -1; }, "num_workers");
  expect_config_error(
      ds, [](LoaderOptions& o) { o.world_size = 0; }, "world_size");
  expect_config_error(
      ds,
      [](LoaderOptions& o) {
        o.world_size = 2;
        o.rank = 2;
      },
      "rank 2");
  expect_config_error(
      ds, [](LoaderOptions& o) { o.timeout = std::chrono::milliseconds(-5); }, "timeout");
  StreamProbeDataset empty(0, 1);
  expect_config_error(
      empty, [](LoaderOptions&) {}, "empty");
  SampleLayout huge({{"x", DType::kF64, {1ll << 20, 1ll << 20}, false}});
  class Huge : public Dataset {
   public:
    explicit Huge(SampleLayout l) : layout_(std::move(l)) {}
    // As many samples as the batch: slots are sized by what a batch can hold.
    std::uint64_t size() const override { return 1ull << 40; }
    const SampleLayout& layout() const override { return layout_; }
    void get(std::uint64_t, Rng&, SampleWriter&) const override {}
    std::string describe() const override { return "Huge"; }
    SampleLayout layout_;
  } huge_ds(huge);
  expect_config_error(
      huge_ds, [](LoaderOptions& o) { o.batch_size = 1ull << 40; }, "does not fit");
}

}  // namespace
}  // namespace seedloader
