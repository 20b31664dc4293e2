#include "transforms/erasing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "seedloader/error.h"
#include "seedloader/random.h"
#include "seedloader/transforms/spec.h"
#include "tests/transforms/test_images.h"

namespace seedloader {
namespace {

using testing::gradient_image;
using testing::same_pixels;
using testing::test_rng;

TEST(RandomErasingTest, ErasesTheLoggedRectangleWithTheValueAndNothingElse) {
  const cv::Mat image = gradient_image(40, 30);
  const RandomErasing erase(1.0, {0.02, 0.33}, {0.3, 3.3}, 7);
  int erased = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    Rng rng = test_rng(seed);
    TransformLog log;
    const cv::Mat out = erase.apply(image, rng, &log);
    ASSERT_EQ(log.value("erase", "erase"), 1.0);
    const int top = static_cast<int>(log.value("erase", "top"));
    const int left = static_cast<int>(log.value("erase", "left"));
    const int h = static_cast<int>(log.value("erase", "height"));
    const int w = static_cast<int>(log.value("erase", "width"));
    ASSERT_LT(h, 30);
    ASSERT_LT(w, 40);
    // h * w is area * U(scale) up to the rounding of each side.
    EXPECT_GE((h + 1.0) * (w + 1.0), 0.02 * 1200) << seed;
    EXPECT_LE((h - 1.0) * (w - 1.0), 0.33 * 1200) << seed;
    for (int y = 0; y < 30; ++y) {
      for (int x = 0; x < 40; ++x) {
        const bool inside = y >= top && y < top + h && x >= left && x < left + w;
        ASSERT_EQ(out.at<cv::Vec3b>(y, x),
                  inside ? cv::Vec3b(7, 7, 7) : image.at<cv::Vec3b>(y, x))
            << seed << " at " << x << "," << y;
      }
    }
    ++erased;
  }
  EXPECT_EQ(erased, 200);
}

TEST(RandomErasingTest, ProbabilityZeroLeavesTheImageAndOneDrawIsTaken) {
  const cv::Mat image = gradient_image(20, 10);
  Rng a = test_rng(3), b = test_rng(3);
  const cv::Mat out =
      RandomErasing(0.0, {0.02, 0.33}, {0.3, 3.3}, 0).apply(image, a, nullptr);
  EXPECT_TRUE(same_pixels(out, image));
  bernoulli(b, 0.0);
  EXPECT_EQ(a(), b());
}

TEST(RandomErasingTest, AnImageTooSmallForAnyRectangleIsLeftAlone) {
  // 1x1: h < 1 and w < 1 never hold, so the ten tries fail, as in torchvision.
  const cv::Mat image = gradient_image(1, 1);
  Rng rng = test_rng(4);
  EXPECT_TRUE(same_pixels(
      RandomErasing(1.0, {0.5, 1.0}, {1.0, 1.0}, 0).apply(image, rng, nullptr), image));
}

TEST(RandomErasingTest, SpecDefaultsAndErrors) {
  EXPECT_NE(parse_transform_spec("erase").describe().find(
                "RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0)"),
            std::string::npos);
  EXPECT_NE(
      parse_transform_spec("erase:1:0.1:0.2:0.5:2:128").describe().find("value=128"),
      std::string::npos);
  EXPECT_THROW(parse_transform_spec("erase:1:0.1"), ConfigError);
  EXPECT_THROW(parse_transform_spec("erase:1.5"), ConfigError);
  EXPECT_THROW(parse_transform_spec("erase:1:0.1:0.2:0.5:2:256"), ConfigError);
  EXPECT_THROW(parse_transform_spec("erase:1:0:0.2"), ConfigError);
}

}  // namespace
}  // namespace seedloader
