// Workers of a DataLoader reading a 10^7-entry dataset index must share the
// parent's pages: after an epoch in which they read every entry, their private
// memory (what copy-on-write would have copied) stays tiny and their
// proportional set size stays well below the index.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "loader/datasets/path_index.h"
#include "loader/datasets/process_memory.h"
#include "seedloader/data_loader.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kEntries = 10'000'000;

PathIndex make_index() {
  PathIndex index;
  index.reserve(kEntries, kEntries * 20);
  char path[64];
  for (std::uint64_t i = 0; i < kEntries; ++i) {
    const int n = std::snprintf(path, sizeof path, "c%03llu/%09llu.jpg",
                                static_cast<unsigned long long>(i % 1000),
                                static_cast<unsigned long long>(i));
    index.add(std::string_view(path, static_cast<std::size_t>(n)),
              static_cast<std::int32_t>(i % 1000));
  }
  return index;
}

// A dataset whose samples are its index entries: get() reads the path and the
// label, as an image dataset does before opening the file.
class IndexDataset final : public Dataset {
 public:
  explicit IndexDataset(const PathIndex& index)
      : index_(index),
        layout_({{"path_length", DType::kI64, {}}, {"label", DType::kI64, {}}}) {}
  std::uint64_t size() const override { return index_.size(); }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t i, Rng&, SampleWriter& out) const override {
    out.field<std::int64_t>(0)[0] = static_cast<std::int64_t>(index_.path_view(i).size());
    out.field<std::int64_t>(1)[0] = index_.label(i);
  }
  std::string describe() const override { return "IndexDataset"; }

 private:
  const PathIndex& index_;
  SampleLayout layout_;
};

TEST(IndexMemoryTest, LoaderWorkersShareTheIndexInsteadOfCopyingIt) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer records every read in per-process shadow memory, so "
                  "each worker holds a private shadow of the index; the default and asan "
                  "presets measure the sharing";
#endif
  const PathIndex index = make_index();
  const std::uint64_t index_bytes = index.bytes();
  const IndexDataset dataset(index);
  LoaderOptions opt;
  opt.batch_size = 1 << 16;
  opt.num_workers = 2;
  opt.persistent_workers = true;  // keep the workers alive to measure them
  opt.seed = 1;
  opt.timeout = std::chrono::milliseconds(60'000);
  DataLoader loader(dataset, opt);
  std::uint64_t samples = 0, label_sum = 0;
  for (const Batch& b : loader) {
    samples += b.size();
    for (std::int64_t label : b.tensor("label").values<std::int64_t>())
      label_sum += label;
  }
  ASSERT_EQ(samples, kEntries);
  EXPECT_EQ(label_sum, kEntries / 1000 * (999 * 1000 / 2));
  // Both workers have read half the entries each and are still alive.
  for (pid_t pid : loader.worker_pids()) {
    const ProcessMemory m = read_process_memory(pid);
    std::printf("index %.1f MB; worker %d: PSS %.1f MB, private %.1f MB\n",
                index_bytes / 1e6, static_cast<int>(pid), m.pss_bytes / 1e6,
                m.private_bytes / 1e6);
    // Private pages are what copy-on-write copies: the decisive figure. PSS splits
    // the index three ways (parent and two workers), so a third of it plus the
    // libraries is the floor; a copying worker would carry the whole index.
    EXPECT_LT(m.private_bytes, index_bytes / 20) << "copy-on-write copied the index";
    EXPECT_LT(m.pss_bytes, index_bytes / 2)
        << "the worker does not share the index pages";
  }
}

}  // namespace
}  // namespace seedloader
