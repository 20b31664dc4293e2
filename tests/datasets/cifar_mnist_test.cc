#include <gtest/gtest.h>

#include "loader/datasets/cifar10.h"
#include "loader/datasets/mnist.h"
#include "tests/datasets/dataset_test_util.h"
#include "transforms/spec.h"

namespace seedloader {
namespace {

using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;
using testing::write_file;

// Record r of a file: label r % 10, plane c pixel p = (p + 7 r + 50 c) & 0xff.
std::vector<std::uint8_t> cifar_records(int count, int first) {
  std::vector<std::uint8_t> bytes;
  for (int r = first; r < first + count; ++r) {
    bytes.push_back(static_cast<std::uint8_t>(r % 10));
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < 1024; ++p)
        bytes.push_back(static_cast<std::uint8_t>(p + 7 * r + 50 * c));
    }
  }
  return bytes;
}

void write_cifar(const TempDir& dir) {
  for (int b = 1; b <= 5; ++b) {
    write_file(dir / ("data_batch_" + std::to_string(b) + ".bin"),
               cifar_records(3, 3 * (b - 1)));
  }
  write_file(dir / "test_batch.bin", cifar_records(2, 100));
}

TEST(Cifar10Test, RecordsAcrossFilesArriveAsChwWithLabels) {
  TempDir dir;
  write_cifar(dir);
  Cifar10 train(dir.path(), true, parse_transform_spec("u8"));
  ASSERT_EQ(train.size(), 15u);
  EXPECT_EQ(train.layout().field(0).shape, (std::vector<std::int64_t>{3, 32, 32}));
  for (std::uint64_t i : {0u, 4u, 14u}) {
    SampleBuffer buffer(train.layout(), i);
    Rng rng = test_rng();
    train.get(i, rng, buffer.writer());
    EXPECT_EQ(buffer.field<std::int64_t>(1)[0], static_cast<std::int64_t>(i % 10));
    auto image = buffer.field<std::uint8_t>(0);
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < 1024; ++p) {
        ASSERT_EQ(image[c * 1024 + p], static_cast<std::uint8_t>(p + 7 * i + 50 * c));
      }
    }
  }
  Cifar10 test(dir.path(), false);
  ASSERT_EQ(test.size(), 2u);
  SampleBuffer buffer(test.layout(), 1);
  Rng rng = test_rng();
  test.get(1, rng, buffer.writer());
  EXPECT_FLOAT_EQ(buffer.field<float>(0)[5],
                  static_cast<std::uint8_t>(5 + 7 * 101) / 255.0f);
}

TEST(Cifar10Test, SizeNotAMultipleOfTheRecordIsADataErrorNamingTheFile) {
  TempDir dir;
  write_cifar(dir);
  auto bytes = cifar_records(2, 0);
  bytes.pop_back();
  write_file(dir / "data_batch_3.bin", bytes);
  try {
    Cifar10(dir.path(), true);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_3.bin"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("3073"), std::string::npos);
  }
}

TEST(Cifar10Test, MissingFileIsADataErrorNamingIt) {
  TempDir dir;
  write_cifar(dir);
  std::filesystem::remove(dir / "data_batch_5.bin");
  try {
    Cifar10(dir.path(), true);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_5.bin"), std::string::npos);
  }
}

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

// n images of 28 x 28 with pixel p of image i = (3 i + p) & 0xff; labels 9 - i % 10.
void write_mnist(const TempDir& dir, std::uint32_t n, std::uint32_t claimed_images,
                 std::uint32_t image_magic = 0x803) {
  std::vector<std::uint8_t> images, labels;
  put_be32(images, image_magic);
  put_be32(images, claimed_images);
  put_be32(images, 28);
  put_be32(images, 28);
  put_be32(labels, 0x801);
  put_be32(labels, n);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (int p = 0; p < 784; ++p) images.push_back(static_cast<std::uint8_t>(3 * i + p));
    labels.push_back(static_cast<std::uint8_t>(9 - i % 10));
  }
  write_file(dir / "train-images-idx3-ubyte", images);
  write_file(dir / "train-labels-idx1-ubyte", labels);
}

TEST(MnistTest, ImagesAndLabelsArriveFromTheIdxFiles) {
  TempDir dir;
  write_mnist(dir, 12, 12);
  Mnist data(dir.path(), true, parse_transform_spec("u8"));
  ASSERT_EQ(data.size(), 12u);
  EXPECT_EQ(data.layout().field(0).shape, (std::vector<std::int64_t>{1, 28, 28}));
  SampleBuffer buffer(data.layout(), 11);
  Rng rng = test_rng();
  data.get(11, rng, buffer.writer());
  EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 9 - 11 % 10);
  auto image = buffer.field<std::uint8_t>(0);
  for (int p = 0; p < 784; ++p) ASSERT_EQ(image[p], static_cast<std::uint8_t>(33 + p));

  Mnist cropped(dir.path(), true, parse_transform_spec("crop:24,normalize:0.5:0.5"));
  EXPECT_EQ(cropped.layout().field(0).shape, (std::vector<std::int64_t>{1, 24, 24}));
  SampleBuffer b2(cropped.layout(), 0);
  cropped.get(0, rng, b2.writer());
  for (float v : b2.field<float>(0)) ASSERT_TRUE(v >= -1.0f && v <= 1.0f) << v;
}

TEST(MnistTest, WrongMagicIsADataErrorNamingTheFile) {
  TempDir dir;
  write_mnist(dir, 4, 4, 0x801);
  try {
    Mnist(dir.path(), true);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("train-images-idx3-ubyte"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
  }
}

TEST(MnistTest, CountBeyondTheFileIsADataError) {
  TempDir dir;
  write_mnist(dir, 4, 1000000);
  try {
    Mnist(dir.path(), true);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("claims 1000000 images"), std::string::npos);
  }
}

TEST(MnistTest, MissingTestFilesAreADataError) {
  TempDir dir;
  write_mnist(dir, 4, 4);
  EXPECT_THROW(Mnist(dir.path(), false), DataError);  // t10k-* absent
}

}  // namespace
}  // namespace seedloader
