// The elastic partition on real datasets: with per-sample seeding, global batch g
// (every rank's batch g, in rank order) holds the same indices and the same bytes
// at every world size dividing G and every worker count, and a run stopped at one
// world size continues at another from the global batch where it stopped.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/datasets/dataset_test_util.h"
#include "tests/datasets/tar_writer.h"

namespace seedloader {
namespace {

using testing::TempDir;

constexpr std::uint64_t kGlobal = 12;

// One global batch: its indices, and each field's bytes, rank after rank.
struct GlobalBatch {
  std::vector<std::uint64_t> indices;
  std::vector<std::vector<std::byte>> fields;
  bool operator==(const GlobalBatch&) const = default;
};

LoaderOptions elastic(std::uint64_t world, std::uint64_t rank, int workers) {
  LoaderOptions o;
  o.batch_size = kGlobal / world;
  o.num_workers = workers;
  o.shuffle = true;
  o.seed = 31;
  o.seeding = SeedScope::kSample;
  o.partition = Partition::kElastic;
  o.world_size = world;
  o.rank = rank;
  o.timeout = std::chrono::milliseconds(60'000);
  return o;
}

// Epoch `epoch` from global batch `first` on, as `world` ranks deliver it.
std::vector<GlobalBatch> run(const Dataset& data, std::uint64_t world, int workers,
                             std::uint64_t epoch = 1, std::uint64_t first = 0) {
  std::vector<GlobalBatch> out;
  for (std::uint64_t r = 0; r < world; ++r) {
    DataLoader loader(data, elastic(world, r, workers));
    loader.resume(epoch, first);
    std::size_t k = 0;
    for (const Batch& b : loader) {
      if (out.size() <= k) out.resize(k + 1);
      GlobalBatch& g = out[k++];
      g.indices.insert(g.indices.end(), b.indices().begin(), b.indices().end());
      g.fields.resize(data.layout().num_fields());
      for (std::size_t f = 0; f < g.fields.size(); ++f) {
        const TensorView t = b.tensor(data.layout().field(f).name);
        g.fields[f].insert(g.fields[f].end(), t.data, t.data + t.bytes());
      }
    }
    EXPECT_EQ(k, out.size()) << "rank " << r << " of " << world;
  }
  return out;
}

void expect_invariant(const Dataset& data) {
  const std::vector<GlobalBatch> one = run(data, 1, 0);
  ASSERT_EQ(one.size(), (data.size() + kGlobal - 1) / kGlobal) << data.describe();
  for (const GlobalBatch& g : one) ASSERT_EQ(g.indices.size(), kGlobal);
  for (auto [world, workers] :
       {std::pair{2u, 2}, std::pair{3u, 1}, std::pair{4u, 0}, std::pair{6u, 2}}) {
    EXPECT_TRUE(run(data, world, workers) == one)
        << data.describe() << ": world " << world << ", " << workers << " workers";
  }
  // Stopped after 2 global batches at 4 ranks, continued at 3 and at 6.
  const std::vector<GlobalBatch> rest(one.begin() + 2, one.end());
  EXPECT_TRUE(run(data, 3, 2, 1, 2) == rest) << data.describe();
  EXPECT_TRUE(run(data, 6, 0, 1, 2) == rest) << data.describe();
  // Another epoch is another order.
  EXPECT_FALSE(run(data, 2, 1, 2) == one) << data.describe();
}

TEST(ElasticPartitionTest, ImageFolderGlobalBatchesAreTheSameAtEveryWorldSize) {
  TempDir dir;
  for (int i = 0; i < 29; ++i) {
    cv::Mat image(36 + i % 5, 44, CV_8UC3);
    cv::randu(image, 0, 255);
    const std::string cls = "class" + std::to_string(i % 3);
    std::filesystem::create_directories(dir / cls);
    ASSERT_TRUE(cv::imwrite(dir / (cls + "/" + std::to_string(i) + ".jpg"), image));
  }
  ImageFolder data(dir.path(), parse_transform_spec("rrc:24,hflip"));
  expect_invariant(data);
}

TEST(ElasticPartitionTest, TarShardsGlobalBatchesAreTheSameAtEveryWorldSize) {
  TempDir dir;
  for (int shard = 0; shard < 3; ++shard) {
    std::vector<testing::Member> members;
    for (int k = 0; k < 9; ++k) {
      cv::Mat image(30, 30 + k, CV_8UC3);
      cv::randu(image, 0, 255);
      std::vector<std::uint8_t> png;
      cv::imencode(".png", image, png);
      const std::string key = std::to_string(shard * 9 + k);
      const std::string label = std::to_string(k % 4);
      members.push_back({testing::Member::kFile, key + ".png", png, ""});
      members.push_back(
          {testing::Member::kFile, key + ".cls", {label.begin(), label.end()}, ""});
    }
    testing::write_tar(dir / ("s" + std::to_string(shard) + ".tar"), members);
  }
  TarShards data(dir / "s{0..2}.tar", parse_transform_spec("rrc:24,hflip"));
  expect_invariant(data);
}

TEST(ElasticPartitionTest, NeedsPerSampleSeeding) {
  TempDir dir;
  cv::Mat image(20, 20, CV_8UC3, cv::Scalar(1, 2, 3));
  std::filesystem::create_directories(dir / "a");
  ASSERT_TRUE(cv::imwrite(dir / "a/0.png", image));
  ImageFolder data(dir.path(), parse_transform_spec("rrc:8,hflip"));
  LoaderOptions o = elastic(2, 0, 0);
  o.seeding = SeedScope::kWorker;
  try {
    DataLoader loader(data, o);
    FAIL() << "elastic with worker seeding was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("seeding sample"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace seedloader
