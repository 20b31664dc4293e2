#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "seedloader/error.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/transforms/test_images.h"
#include "transforms/blur.h"
#include "transforms/color_jitter.h"
#include "transforms/rotation.h"

namespace seedloader {
namespace {

using testing::gradient_image;
using testing::same_pixels;
using testing::test_rng;

TEST(ColorJitterTest, BrightnessScalesEveryPixelWithSaturation) {
  const cv::Mat image = gradient_image(50, 40);
  cv::Mat out = adjust_brightness(image, 1.5);
  for (int y = 0; y < 40; ++y) {
    for (int x = 0; x < 50; ++x) {
      for (int c = 0; c < 3; ++c) {
        // OpenCV rounds halves to even, as nearbyint does.
        const double want =
            std::min(255.0, std::nearbyint(image.at<cv::Vec3b>(y, x)[c] * 1.5));
        ASSERT_EQ(out.at<cv::Vec3b>(y, x)[c], want);
      }
    }
  }
}

TEST(ColorJitterTest, ZeroContrastGivesTheMeanGreyLevel) {
  cv::Mat image(4, 4, CV_8UC3, cv::Scalar(0, 0, 0));
  image(cv::Rect(0, 0, 2, 4)).setTo(cv::Scalar(200, 200, 200));  // mean grey 100
  cv::Mat out = adjust_contrast(image, 0.0);
  EXPECT_TRUE(same_pixels(out, cv::Mat(4, 4, CV_8UC3, cv::Scalar(100, 100, 100))));
}

TEST(ColorJitterTest, ZeroSaturationGivesGrey) {
  cv::Mat image(2, 2, CV_8UC3, cv::Scalar(255, 0, 0));  // pure red (RGB)
  cv::Mat out = adjust_saturation(image, 0.0);
  const int grey = static_cast<int>(std::lround(0.299 * 255));
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(out.at<cv::Vec3b>(0, 0)[c], grey, 1);
}

TEST(ColorJitterTest, HalfTurnHueShiftTurnsRedIntoCyan) {
  cv::Mat image(2, 2, CV_8UC3, cv::Scalar(255, 0, 0));
  cv::Mat out = adjust_hue(image, 0.5);
  const cv::Vec3b px = out.at<cv::Vec3b>(1, 1);
  EXPECT_LE(px[0], 8);
  EXPECT_GE(px[1], 247);
  EXPECT_GE(px[2], 247);
}

// Every one of the 2^24 RGB colours, hue-shifted here and by torchvision's
// adjust_hue on a PIL image (Pillow's 8-bit HSV), byte for byte.
TEST(ColorJitterTest, HueShiftEqualsTorchvisionsOnEveryColour) {
  SL_REQUIRE_PYTHON_MODULE("torchvision");
  cv::Mat all(4096, 4096, CV_8UC3);
  for (int y = 0; y < 4096; ++y) {
    for (int x = 0; x < 4096; ++x) {
      const int c = y * 4096 + x;
      all.at<cv::Vec3b>(y, x) = cv::Vec3b(c >> 16, (c >> 8) & 0xff, c & 0xff);
    }
  }
  const double shifts[] = {0.1, -0.25};  // a shift each way, both wrapping
  std::string mine;
  for (double shift : shifts) {
    const cv::Mat out = adjust_hue(all, shift);
    std::uint64_t h = 0;  // sum of byte * (2654435761 * i + 1), mod 2^64
    const std::uint8_t* p = out.ptr<std::uint8_t>(0);
    for (std::uint64_t i = 0; i < 4096ull * 4096 * 3; ++i)
      h += p[i] * (2654435761ull * i + 1);
    mine += std::to_string(h) + "\n";
  }
  const std::string script =
      "import numpy as np\n"
      "from PIL import Image\n"
      "import torchvision.transforms.functional as F\n"
      "c = np.arange(1 << 24, dtype=np.uint32)\n"
      "rgb = np.stack([c >> 16, (c >> 8) & 255, c & 255], -1).astype(np.uint8)\n"
      "img = Image.fromarray(rgb.reshape(4096, 4096, 3), 'RGB')\n"
      "w = np.arange(4096 * 4096 * 3, dtype=np.uint64) * np.uint64(2654435761) + "
      "np.uint64(1)\n"
      "for shift in (0.1, -0.25):\n"
      "    out = np.asarray(F.adjust_hue(img, shift)).reshape(-1).astype(np.uint64)\n"
      "    print(int((out * w).sum(dtype=np.uint64)))\n";
  const auto r = testing_util::run_python("hue_check.py", script);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(mine, r.out);
}

TEST(ColorJitterTest, DrawnFactorsStayInTheirRanges) {
  ColorJitter jitter(0.4, 0.3, 0.2, 0.1);
  const cv::Mat image = gradient_image(8, 8);
  Rng rng = test_rng(1);
  for (int i = 0; i < 500; ++i) {
    TransformLog log;
    jitter.apply(image, rng, &log);
    ASSERT_GE(log.value("jitter", "brightness"), 0.6);
    ASSERT_LT(log.value("jitter", "brightness"), 1.4);
    ASSERT_GE(log.value("jitter", "contrast"), 0.7);
    ASSERT_LT(log.value("jitter", "contrast"), 1.3);
    ASSERT_GE(log.value("jitter", "saturation"), 0.8);
    ASSERT_LT(log.value("jitter", "saturation"), 1.2);
    ASSERT_GE(log.value("jitter", "hue"), -0.1);
    ASSERT_LT(log.value("jitter", "hue"), 0.1);
  }
}

TEST(ColorJitterTest, NegativeStrengthIsConfigError) {
  EXPECT_THROW(ColorJitter(-0.1, 0, 0, 0), ConfigError);
  EXPECT_THROW(ColorJitter(0, 0, 0, 0.6), ConfigError);
}

TEST(RandomRotationTest, ZeroDegreesIsTheIdentity) {
  const cv::Mat image = gradient_image(31, 17);
  Rng rng = test_rng(2);
  EXPECT_TRUE(same_pixels(RandomRotation(0).apply(image, rng, nullptr), image));
}

TEST(RandomRotationTest, AnglesStayWithinDegreesAndCentrePixelIsKept) {
  cv::Mat image(21, 21, CV_8UC3, cv::Scalar(0, 0, 0));
  image.at<cv::Vec3b>(10, 10) = cv::Vec3b(255, 255, 255);
  image.at<cv::Vec3b>(10, 11) = cv::Vec3b(255, 255, 255);
  RandomRotation rotation(30);
  Rng rng = test_rng(3);
  for (int i = 0; i < 100; ++i) {
    TransformLog log;
    cv::Mat out = rotation.apply(image, rng, &log);
    const double angle = log.value("rotate", "degrees");
    ASSERT_GE(angle, -30);
    ASSERT_LT(angle, 30);
    ASSERT_EQ(out.at<cv::Vec3b>(10, 10)[0], 255);  // the centre does not move
  }
}

TEST(GaussianBlurTest, ConstantImageIsUnchangedAndSigmaInRange) {
  cv::Mat image(16, 16, CV_8UC3, cv::Scalar(40, 80, 120));
  GaussianBlur blur(5, 0.1, 2.0);
  Rng rng = test_rng(4);
  for (int i = 0; i < 50; ++i) {
    TransformLog log;
    ASSERT_TRUE(same_pixels(blur.apply(image, rng, &log), image));
    ASSERT_GE(log.value("blur", "sigma"), 0.1);
    ASSERT_LT(log.value("blur", "sigma"), 2.0);
  }
}

TEST(GaussianBlurTest, SpreadsAnImpulseSymmetrically) {
  cv::Mat image(9, 9, CV_8UC1, cv::Scalar(0));
  image.at<uchar>(4, 4) = 255;
  Rng rng = test_rng(5);
  cv::Mat out = GaussianBlur(3, 1.0, 1.0).apply(image, rng, nullptr);
  EXPECT_LT(out.at<uchar>(4, 4), 255);
  EXPECT_GT(out.at<uchar>(4, 3), 0);
  EXPECT_EQ(out.at<uchar>(4, 3), out.at<uchar>(4, 5));
  EXPECT_EQ(out.at<uchar>(3, 4), out.at<uchar>(5, 4));
  EXPECT_EQ(out.at<uchar>(4, 1), 0);  // outside the 3x3 kernel
}

TEST(GaussianBlurTest, EvenKernelIsConfigError) {
  EXPECT_THROW(GaussianBlur(4, 1, 2), ConfigError);
}

}  // namespace
}  // namespace seedloader
