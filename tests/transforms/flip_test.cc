#include "transforms/flip.h"

#include <gtest/gtest.h>

#include "seedloader/error.h"
#include "tests/transforms/test_images.h"

namespace seedloader {
namespace {

using testing::gradient_image;
using testing::test_rng;

TEST(FlipTest, HorizontalFlipMirrorsColumns) {
  const cv::Mat image = gradient_image(7, 5);
  Rng rng = test_rng(1);
  cv::Mat out = RandomHorizontalFlip(1.0).apply(image, rng, nullptr);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      ASSERT_EQ(out.at<cv::Vec3b>(y, x), image.at<cv::Vec3b>(y, 6 - x));
    }
  }
}

TEST(FlipTest, VerticalFlipMirrorsRows) {
  const cv::Mat image = gradient_image(7, 5);
  Rng rng = test_rng(2);
  cv::Mat out = RandomVerticalFlip(1.0).apply(image, rng, nullptr);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      ASSERT_EQ(out.at<cv::Vec3b>(y, x), image.at<cv::Vec3b>(4 - y, x));
    }
  }
}

TEST(FlipTest, ZeroProbabilityNeverFlipsButStillDraws) {
  const cv::Mat image = gradient_image(7, 5);
  Rng rng = test_rng(3);
  Rng before = rng;
  cv::Mat out = RandomHorizontalFlip(0.0).apply(image, rng, nullptr);
  EXPECT_TRUE(testing::same_pixels(out, image));
  EXPECT_FALSE(rng == before);
}

TEST(FlipTest, FlipRateMatchesP) {
  const cv::Mat image = gradient_image(2, 2);
  for (double p : {0.1, 0.5, 0.8}) {
    RandomFlip flip = RandomHorizontalFlip(p);
    Rng rng = test_rng(4);
    const int n = 20000;
    int flips = 0;
    for (int i = 0; i < n; ++i) {
      cv::Mat out = flip.apply(image, rng, nullptr);
      flips += out.at<cv::Vec3b>(0, 0) != image.at<cv::Vec3b>(0, 0);
    }
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(static_cast<double>(flips) / n, p, 5 * sigma) << "p=" << p;
  }
}

TEST(FlipTest, ProbabilityOutsideUnitIntervalIsConfigError) {
  EXPECT_THROW(RandomHorizontalFlip(1.5), ConfigError);
  EXPECT_THROW(RandomVerticalFlip(-0.1), ConfigError);
}

}  // namespace
}  // namespace seedloader
