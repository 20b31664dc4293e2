#include "seedloader/transforms/tensor.h"

#include <gtest/gtest.h>

#include <vector>

#include "seedloader/error.h"
#include "tests/transforms/test_images.h"

namespace seedloader {
namespace {

TEST(ToTensorTest, WritesChwScaledToUnitInterval) {
  const cv::Mat image = testing::gradient_image(5, 3);
  std::vector<float> out(3 * 3 * 5);
  ToTensor().write(image, std::span<float>(out));
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 3; ++y) {
      for (int x = 0; x < 5; ++x) {
        ASSERT_FLOAT_EQ(out[c * 15 + y * 5 + x], image.at<cv::Vec3b>(y, x)[c] / 255.0f);
      }
    }
  }
}

TEST(ToTensorTest, FusedNormalizeMatchesTheTwoStepReference) {
  const cv::Mat image = testing::gradient_image(6, 4);
  std::vector<float> out(3 * 4 * 6);
  ToTensor(Normalize::imagenet()).write(image, std::span<float>(out));
  const double mean[3] = {0.485, 0.456, 0.406};
  const double sd[3] = {0.229, 0.224, 0.225};
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 6; ++x) {
        const double want = (image.at<cv::Vec3b>(y, x)[c] / 255.0 - mean[c]) / sd[c];
        ASSERT_NEAR(out[c * 24 + y * 6 + x], want, 1e-5);
      }
    }
  }
}

TEST(ToTensorTest, Uint8OutputIsAPlainTranspose) {
  const cv::Mat image = testing::gradient_image(4, 2);
  std::vector<std::uint8_t> out(3 * 2 * 4);
  ToTensor::uint8().write(image, std::span<std::uint8_t>(out));
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 4; ++x) {
        ASSERT_EQ(out[c * 8 + y * 4 + x], image.at<cv::Vec3b>(y, x)[c]);
      }
    }
  }
}

TEST(ToTensorTest, WrongRowSizeIsDataError) {
  const cv::Mat image = testing::gradient_image(4, 2);
  std::vector<float> out(10);
  EXPECT_THROW(ToTensor().write(image, std::span<float>(out)), DataError);
}

TEST(NormalizeTest, InvalidStatisticsAreConfigErrors) {
  EXPECT_THROW(Normalize({0.5f, 0.5f}, {0.5f, 0.5f}), ConfigError);
  EXPECT_THROW(Normalize({0.5f}, {0.0f}), ConfigError);
  EXPECT_THROW(Normalize({0.5f, 0.5f, 0.5f}, {1.0f}), ConfigError);
}

}  // namespace
}  // namespace seedloader
