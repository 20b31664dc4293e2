// Every dataset through the DataLoader with forked workers: each sample arrives
// once per epoch with the bytes get() writes directly, per-sample seeding makes
// the augmented batches independent of the worker count, and a corrupt file
// follows the loader's on_bad_sample policy.
#include <gtest/gtest.h>

#include <map>
#include <opencv2/imgcodecs.hpp>

#include "loader/datasets/safetensors.h"
#include "seedloader/data_loader.h"
#include "seedloader/datasets/cifar10.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/datasets/tensor_file.h"
#include "seedloader/derive.h"
#include "seedloader/transforms/spec.h"
#include "tests/common/epoch_bytes.h"
#include "tests/datasets/dataset_test_util.h"
#include "tests/datasets/tar_writer.h"

namespace seedloader {
namespace {

using testing::TempDir;
using testing::write_file;

using Epoch = testing_util::EpochBytes;

Epoch run_epoch(const Dataset& data, int workers, SeedScope seeding,
                std::uint64_t epoch = 0) {
  LoaderOptions opt;
  opt.batch_size = 4;
  opt.num_workers = workers;
  opt.shuffle = true;
  opt.seed = 77;
  opt.seeding = seeding;
  opt.timeout = std::chrono::milliseconds(30'000);
  DataLoader loader(data, opt);
  loader.set_epoch(epoch);
  return testing_util::epoch_bytes(loader, data.layout());
}

// The bytes get() writes for `index` with the per-sample stream of epoch 0.
std::vector<std::byte> direct(const Dataset& data, std::uint64_t index) {
  testing::SampleBuffer buffer(data.layout(), index);
  Rng rng = sample_stream(77, 0, index);
  data.get(index, rng, buffer.writer());
  std::vector<std::byte> bytes;
  for (std::size_t f = 0; f < data.layout().num_fields(); ++f) {
    const auto* p =
        reinterpret_cast<const std::byte*>(buffer.field<std::uint8_t>(f).data());
    bytes.insert(bytes.end(), p, p + data.layout().field(f).bytes());
  }
  return bytes;
}

// Through 2 workers: every sample once, equal to a direct get() with the same
// stream, and equal to the in-thread loader (per-sample seeding).
void check_through_loader(const Dataset& data) {
  const Epoch two = run_epoch(data, 2, SeedScope::kSample);
  ASSERT_EQ(two.size(), data.size()) << data.describe();
  const Epoch none = run_epoch(data, 0, SeedScope::kSample);
  EXPECT_TRUE(two == none) << data.describe();
  for (std::uint64_t i : {std::uint64_t{0}, data.size() - 1}) {
    EXPECT_TRUE(two.at(i) == direct(data, i)) << data.describe() << " sample " << i;
  }
}

void write_image_folder(const TempDir& dir, int per_class) {
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < per_class; ++i) {
      cv::Mat image(40 + i, 50, CV_8UC3);
      cv::randu(image, 0, 255);
      std::filesystem::create_directories(dir / ("class" + std::to_string(c)));
      ASSERT_TRUE(cv::imwrite(dir / ("class" + std::to_string(c) + "/" +
                                     std::to_string(i) + (i % 2 ? ".png" : ".jpg")),
                              image));
    }
  }
}

TEST(DatasetLoaderTest, ImageFolderWithAugmentationThroughWorkers) {
  TempDir dir;
  write_image_folder(dir, 5);
  ImageFolder data(dir.path(), parse_transform_spec("rrc:24,hflip,jitter:0.4:0.4:0.4:0.1,"
                                                    "normalize:imagenet"));
  check_through_loader(data);
  // Worker seeding: a different epoch draws different augmentations.
  EXPECT_FALSE(run_epoch(data, 2, SeedScope::kWorker, 0) ==
               run_epoch(data, 2, SeedScope::kWorker, 1));
}

TEST(DatasetLoaderTest, Cifar10AndMnistThroughWorkers) {
  TempDir dir;
  std::vector<std::uint8_t> records;
  for (int r = 0; r < 6; ++r) {
    records.push_back(static_cast<std::uint8_t>(r));
    for (int p = 0; p < 3072; ++p) records.push_back(static_cast<std::uint8_t>(p * r));
  }
  write_file(dir / "test_batch.bin", records);
  check_through_loader(
      Cifar10(dir.path(), Split::kTest, parse_transform_spec("crop:32:4,hflip")));

  std::vector<std::uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 9, 0, 0, 0, 28, 0, 0, 0, 28};
  std::vector<std::uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, 9};
  for (int i = 0; i < 9; ++i) {
    for (int p = 0; p < 784; ++p) images.push_back(static_cast<std::uint8_t>(p + i));
    labels.push_back(static_cast<std::uint8_t>(i));
  }
  write_file(dir / "t10k-images-idx3-ubyte", images);
  write_file(dir / "t10k-labels-idx1-ubyte", labels);
  check_through_loader(
      Mnist(dir.path(), Split::kTest, parse_transform_spec("rotate:10")));
}

TEST(DatasetLoaderTest, TensorFileAndSyntheticThroughWorkers) {
  TempDir dir;
  std::vector<float> x(10 * 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  const SafetensorsWrite tensors[] = {
      {"x",
       "F32",
       {10, 3},
       {reinterpret_cast<const std::uint8_t*>(x.data()), x.size() * 4}}};
  write_safetensors(dir / "t.safetensors", tensors);
  check_through_loader(TensorFile(dir / "t.safetensors"));
  check_through_loader(Synthetic(13, 20, 20, 3, parse_transform_spec("rrc:16,vflip")));
}

TEST(DatasetLoaderTest, TarShardsThroughWorkers) {
  TempDir dir;
  for (int shard = 0; shard < 2; ++shard) {
    std::vector<testing::Member> members;
    for (int k = 0; k < 5; ++k) {
      cv::Mat image(30, 30 + k, CV_8UC3);
      cv::randu(image, 0, 255);
      std::vector<std::uint8_t> png;
      cv::imencode(".png", image, png);
      const std::string key = std::to_string(shard * 5 + k);
      const std::string label = std::to_string(k);
      members.push_back({testing::Member::kFile, key + ".png", png, ""});
      members.push_back(
          {testing::Member::kFile, key + ".cls", {label.begin(), label.end()}, ""});
    }
    testing::write_tar(dir / ("s" + std::to_string(shard) + ".tar"), members);
  }
  check_through_loader(
      TarShards(dir / "s{0..1}.tar", parse_transform_spec("rrc:24,hflip")));
}

TEST(DatasetLoaderTest, CorruptFileRaisesOrIsSkippedByPolicy) {
  TempDir dir;
  write_image_folder(dir, 4);
  auto bytes = testing::read_file(dir / "class1/2.jpg");
  bytes.resize(bytes.size() / 2);
  write_file(dir / "class1/2.jpg", bytes);  // sample 6
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:16"));
  LoaderOptions opt;
  opt.batch_size = 2;
  opt.num_workers = 2;
  opt.seed = 1;
  opt.timeout = std::chrono::milliseconds(30'000);
  {
    DataLoader loader(data, opt);
    try {
      for (const Batch& b : loader) (void)b;
      FAIL() << "the truncated JPEG passed";
    } catch (const WorkerError& e) {
      EXPECT_NE(std::string(e.what()).find("class1/2.jpg"), std::string::npos)
          << e.what();
      EXPECT_EQ(e.failure().index, 6);
    }
  }
  opt.on_bad_sample = BadSample::kSkip;
  DataLoader loader(data, opt);
  std::uint64_t samples = 0;
  for (const Batch& b : loader) samples += b.size();
  EXPECT_EQ(samples, data.size());
  EXPECT_EQ(loader.skipped_samples(), 1u);
}

}  // namespace
}  // namespace seedloader
