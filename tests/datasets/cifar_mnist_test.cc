#include <gtest/gtest.h>

#include <filesystem>

#include "seedloader/datasets/cifar10.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/transforms/spec.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::contains;
using testing::data_error_without_waiting;
using testing::get_error;
using testing::make_fifo;
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

constexpr std::size_t kCifarRecord = 1 + 3 * 1024;

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
  Cifar10 train(dir.path(), Split::kTrain, parse_transform_spec("u8"));
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
  Cifar10 test(dir.path(), Split::kTest);
  ASSERT_EQ(test.size(), 2u);
  SampleBuffer buffer(test.layout(), 1);
  Rng rng = test_rng();
  test.get(1, rng, buffer.writer());
  EXPECT_FLOAT_EQ(buffer.field<float>(0)[5],
                  static_cast<std::uint8_t>(5 + 7 * 101) / 255.0f);
}

TEST(Cifar10Test, LabelByteAboveNineIsADataErrorNamingTheFileAndSample) {
  TempDir dir;
  write_cifar(dir);
  std::vector<std::uint8_t> records = cifar_records(3, 6);
  records[kCifarRecord] = 10;  // record 1 of data_batch_3: sample 7
  write_file(dir / "data_batch_3.bin", records);
  Cifar10 train(dir.path(), Split::kTrain, parse_transform_spec("u8"));
  SampleBuffer buffer(train.layout(), 7);
  Rng rng = test_rng();
  try {
    train.get(7, rng, buffer.writer());
    FAIL() << "no error";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sample 7"), std::string::npos) << what;
    EXPECT_NE(what.find("data_batch_3.bin"), std::string::npos) << what;
    EXPECT_NE(what.find("label byte 10"), std::string::npos) << what;
  }
}

TEST(Cifar10Test, SizeNotAMultipleOfTheRecordIsADataErrorNamingTheFile) {
  TempDir dir;
  write_cifar(dir);
  auto bytes = cifar_records(2, 0);
  bytes.pop_back();
  write_file(dir / "data_batch_3.bin", bytes);
  try {
    Cifar10(dir.path(), Split::kTrain);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_3.bin"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("3073"), std::string::npos);
  }
}

TEST(Cifar10Test, FifoBatchFileIsADataErrorNotAWait) {
  TempDir dir;
  write_cifar(dir);
  std::filesystem::remove(dir / "data_batch_2.bin");
  make_fifo(dir / "data_batch_2.bin");
  const std::string error = data_error_without_waiting(
      dir / "data_batch_2.bin", [&] { Cifar10(dir.path(), Split::kTrain); });
  EXPECT_TRUE(contains(error, "data_batch_2.bin")) << error;
  EXPECT_TRUE(contains(error, "FIFO")) << error;
}

TEST(Cifar10Test, FileTruncatedWhileInUseIsADataErrorNotSigbus) {
  TempDir dir;
  write_cifar(dir);
  Cifar10 data(dir.path(), Split::kTrain);
  // 3 records per file; keep one record of data_batch_5 (samples 12, 13, 14).
  std::filesystem::resize_file(dir / "data_batch_5.bin", 3073);
  EXPECT_EQ(get_error(data, 12), "");
  const std::string error = get_error(data, 14);
  EXPECT_TRUE(contains(error, "data_batch_5.bin")) << error;
  EXPECT_TRUE(contains(error, "sample 14")) << error;
  // Truncated to nothing, mid-page.
  std::filesystem::resize_file(dir / "data_batch_5.bin", 0);
  EXPECT_TRUE(contains(get_error(data, 12), "data_batch_5.bin"));
}

TEST(Cifar10Test, MissingFileIsADataErrorNamingIt) {
  TempDir dir;
  write_cifar(dir);
  std::filesystem::remove(dir / "data_batch_5.bin");
  try {
    Cifar10(dir.path(), Split::kTrain);
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
  Mnist data(dir.path(), Split::kTrain, parse_transform_spec("u8"));
  ASSERT_EQ(data.size(), 12u);
  EXPECT_EQ(data.layout().field(0).shape, (std::vector<std::int64_t>{1, 28, 28}));
  SampleBuffer buffer(data.layout(), 11);
  Rng rng = test_rng();
  data.get(11, rng, buffer.writer());
  EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 9 - 11 % 10);
  auto image = buffer.field<std::uint8_t>(0);
  for (int p = 0; p < 784; ++p) ASSERT_EQ(image[p], static_cast<std::uint8_t>(33 + p));

  Mnist cropped(dir.path(), Split::kTrain,
                parse_transform_spec("crop:24,normalize:0.5:0.5"));
  EXPECT_EQ(cropped.layout().field(0).shape, (std::vector<std::int64_t>{1, 24, 24}));
  SampleBuffer b2(cropped.layout(), 0);
  cropped.get(0, rng, b2.writer());
  for (float v : b2.field<float>(0)) ASSERT_TRUE(v >= -1.0f && v <= 1.0f) << v;
}

// Before, MNIST passed any label byte through (CIFAR already checked its own).
TEST(MnistTest, LabelByteAboveNineIsADataErrorNamingTheFileAndSample) {
  TempDir dir;
  write_mnist(dir, 4, 4);
  std::vector<std::uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 10, 3};
  write_file(dir / "train-labels-idx1-ubyte", labels);
  Mnist data(dir.path(), Split::kTrain, parse_transform_spec("u8"));
  SampleBuffer buffer(data.layout(), 2);
  Rng rng = test_rng();
  data.get(1, rng, buffer.writer());
  EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 2);
  try {
    data.get(2, rng, buffer.writer());
    FAIL() << "no error";
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("sample 2"), std::string::npos) << what;
    EXPECT_NE(what.find("train-labels-idx1-ubyte"), std::string::npos) << what;
    EXPECT_NE(what.find("label byte 10"), std::string::npos) << what;
  }
}

TEST(MnistTest, WrongMagicIsADataErrorNamingTheFile) {
  TempDir dir;
  write_mnist(dir, 4, 4, 0x801);
  try {
    Mnist(dir.path(), Split::kTrain);
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
    Mnist(dir.path(), Split::kTrain);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("claims 1000000 images"), std::string::npos);
  }
}

TEST(MnistTest, MissingTestFilesAreADataError) {
  TempDir dir;
  write_mnist(dir, 4, 4);
  EXPECT_THROW(Mnist(dir.path(), Split::kTest), DataError);  // t10k-* absent
}

TEST(MnistTest, FifoImageFileIsADataErrorNotAWait) {
  TempDir dir;
  write_mnist(dir, 4, 4);
  std::filesystem::remove(dir / "train-images-idx3-ubyte");
  make_fifo(dir / "train-images-idx3-ubyte");
  const std::string error = data_error_without_waiting(
      dir / "train-images-idx3-ubyte", [&] { Mnist(dir.path(), Split::kTrain); });
  EXPECT_TRUE(contains(error, "train-images-idx3-ubyte")) << error;
  EXPECT_TRUE(contains(error, "FIFO")) << error;
}

TEST(MnistTest, FilesTruncatedWhileInUseAreADataErrorNotSigbus) {
  TempDir dir;
  write_mnist(dir, 12, 12);
  Mnist data(dir.path(), Split::kTrain);
  // Keeps the header and image 0 (16 + 784 bytes), and only part of a page.
  std::filesystem::resize_file(dir / "train-images-idx3-ubyte", 16 + 784 + 100);
  EXPECT_EQ(get_error(data, 0), "");
  std::string error = get_error(data, 11);
  EXPECT_TRUE(contains(error, "train-images-idx3-ubyte")) << error;
  EXPECT_TRUE(contains(error, "sample 11")) << error;
  write_mnist(dir, 12, 12);
  std::filesystem::resize_file(dir / "train-labels-idx1-ubyte", 8 + 5);
  error = get_error(data, 11);
  EXPECT_TRUE(contains(error, "train-labels-idx1-ubyte")) << error;
}

}  // namespace
}  // namespace seedloader
