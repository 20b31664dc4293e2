// The augmentation ops on images whose answers are known by hand: the integer ops
// exactly, the float32 blends with torchvision's truncation, the affine ops by
// where each pixel must land.
#include "transforms/augment_ops.h"

#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "seedloader/error.h"
#include "tests/transforms/test_images.h"

namespace seedloader {
namespace {

using testing::gradient_image;
using testing::noise_image;
using testing::same_pixels;

cv::Mat every_byte() {  // one row holding 0..255
  cv::Mat m(1, 256, CV_8UC1);
  for (int i = 0; i < 256; ++i) m.at<std::uint8_t>(0, i) = static_cast<std::uint8_t>(i);
  return m;
}

TEST(AugmentOpsTest, PosterizeKeepsTheHighBits) {
  const cv::Mat in = every_byte();
  for (int bits = 0; bits <= 8; ++bits) {
    const cv::Mat out = apply_augment_op(in, AugmentOp::kPosterize, bits);
    for (int p = 0; p < 256; ++p) {
      ASSERT_EQ(out.at<std::uint8_t>(0, p), (p >> (8 - bits)) << (8 - bits))
          << bits << " bits, " << p;
    }
  }
  // The magnitude is truncated, as Python's int() does.
  EXPECT_TRUE(same_pixels(apply_augment_op(in, AugmentOp::kPosterize, 3.9),
                          apply_augment_op(in, AugmentOp::kPosterize, 3)));
}

TEST(AugmentOpsTest, SolarizeInvertsFromTheThresholdUp) {
  const cv::Mat in = every_byte();
  for (double t : {0.0, 127.5, 128.0, 246.5, 255.0, 256.0}) {
    const cv::Mat out = apply_augment_op(in, AugmentOp::kSolarize, t);
    for (int p = 0; p < 256; ++p) {
      ASSERT_EQ(out.at<std::uint8_t>(0, p), p >= t ? 255 - p : p) << t << ", " << p;
    }
  }
}

TEST(AugmentOpsTest, AutoContrastStretchesEachChannelAndTruncates) {
  cv::Mat in(1, 3, CV_8UC3);
  in.at<cv::Vec3b>(0, 0) = {50, 7, 0};
  in.at<cv::Vec3b>(0, 1) = {100, 7, 128};
  in.at<cv::Vec3b>(0, 2) = {150, 7, 255};
  const cv::Mat out = apply_augment_op(in, AugmentOp::kAutoContrast, 0);
  // Red: (p - 50) * 2.55 truncated; green is flat and stays; blue already spans.
  EXPECT_EQ(out.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 7, 0));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 1), cv::Vec3b(127, 7, 128));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 2), cv::Vec3b(255, 7, 255));
  // A range of 182: 182 * (255 / 182) is 254.99998 in float32, but torch's
  // scale is (1 / 182) * 255 and its top value 255.00002.
  cv::Mat span(1, 2, CV_8UC1);
  span.at<std::uint8_t>(0, 0) = 16;
  span.at<std::uint8_t>(0, 1) = 198;
  const cv::Mat stretched = apply_augment_op(span, AugmentOp::kAutoContrast, 0);
  EXPECT_EQ(stretched.at<std::uint8_t>(0, 0), 0);
  EXPECT_EQ(stretched.at<std::uint8_t>(0, 1), 255);
}

TEST(AugmentOpsTest, EqualizeSpreadsTheCumulativeHistogram) {
  // 255 pixels each of 0, 100 and 200: step = 510 / 255 = 2, so the levels go to
  // (0 + 1) / 2 = 0, (255 + 1) / 2 = 128 and (510 + 1) / 2 = 255.
  cv::Mat in(3, 255, CV_8UC1);
  in.row(0).setTo(0);
  in.row(1).setTo(100);
  in.row(2).setTo(200);
  const cv::Mat out = apply_augment_op(in, AugmentOp::kEqualize, 0);
  EXPECT_EQ(cv::countNonZero(out.row(0) != 0), 0);
  EXPECT_EQ(cv::countNonZero(out.row(1) != 128), 0);
  EXPECT_EQ(cv::countNonZero(out.row(2) != 255), 0);
  // Too few pixels below the top level for a step of 1: left as it is.
  cv::Mat sparse(2, 100, CV_8UC1);
  sparse.row(0).setTo(10);
  sparse.row(1).setTo(200);
  EXPECT_TRUE(same_pixels(apply_augment_op(sparse, AugmentOp::kEqualize, 0), sparse));
}

TEST(AugmentOpsTest, BrightnessTruncatesLikeTorchvisionsTensorBlend) {
  cv::Mat in(1, 3, CV_8UC1);
  in.at<std::uint8_t>(0, 0) = 101;  // 151.5 -> 151
  in.at<std::uint8_t>(0, 1) = 200;  // 300 -> 255
  in.at<std::uint8_t>(0, 2) = 3;    // 4.5 -> 4
  const cv::Mat out = apply_augment_op(in, AugmentOp::kBrightness, 0.5);
  EXPECT_EQ(out.at<std::uint8_t>(0, 0), 151);
  EXPECT_EQ(out.at<std::uint8_t>(0, 1), 255);
  EXPECT_EQ(out.at<std::uint8_t>(0, 2), 4);
}

TEST(AugmentOpsTest, ZeroContrastAndZeroColourGiveTheGreyLevels) {
  cv::Mat in(2, 2, CV_8UC3, cv::Scalar(0, 0, 0));
  in.row(0).setTo(cv::Scalar(200, 200, 200));  // luma 199 (float32, truncated)
  const cv::Mat flat = apply_augment_op(in, AugmentOp::kContrast, -1.0);
  EXPECT_EQ(cv::countNonZero(flat.reshape(1) != 99), 0);  // mean 99.5, truncated
  const cv::Mat grey = apply_augment_op(in, AugmentOp::kColor, -1.0);
  EXPECT_EQ(grey.at<cv::Vec3b>(0, 0), cv::Vec3b(199, 199, 199));
  EXPECT_EQ(grey.at<cv::Vec3b>(1, 1), cv::Vec3b(0, 0, 0));
  // Colour leaves a one-channel image alone.
  const cv::Mat one = noise_image(8, 6, 3).reshape(1);
  EXPECT_TRUE(same_pixels(apply_augment_op(one, AugmentOp::kColor, 0.7), one));
}

TEST(AugmentOpsTest, SharpnessBlendsWithTheRoundedInteriorSmoothing) {
  cv::Mat in(5, 5, CV_8UC1, cv::Scalar(0));
  in.at<std::uint8_t>(2, 2) = 200;
  // Factor 0 is the smoothed image itself: 5 * 200 / 13 = 76.9 -> 77 at the
  // centre, 200 / 13 = 15.4 -> 15 around it, and the border as it was.
  const cv::Mat smooth = apply_augment_op(in, AugmentOp::kSharpness, -1.0);
  EXPECT_EQ(smooth.at<std::uint8_t>(2, 2), 77);
  EXPECT_EQ(smooth.at<std::uint8_t>(1, 1), 15);
  EXPECT_EQ(smooth.at<std::uint8_t>(3, 2), 15);
  EXPECT_EQ(smooth.at<std::uint8_t>(0, 0), 0);
  EXPECT_EQ(cv::countNonZero(smooth), 9);
  // Images of two pixels or less on a side are left alone.
  const cv::Mat thin = noise_image(9, 2, 1);
  EXPECT_TRUE(same_pixels(apply_augment_op(thin, AugmentOp::kSharpness, 0.9), thin));
}

TEST(AugmentOpsTest, TranslateMovesByWholePixelsAndFillsWithZero) {
  const cv::Mat in = gradient_image(20, 10);
  const cv::Mat right = apply_augment_op(in, AugmentOp::kTranslateX, 3.7);  // 3 pixels
  EXPECT_EQ(cv::countNonZero(right(cv::Rect(0, 0, 3, 10)).reshape(1)), 0);
  EXPECT_TRUE(same_pixels(right(cv::Rect(3, 0, 17, 10)), in(cv::Rect(0, 0, 17, 10))));
  const cv::Mat up = apply_augment_op(in, AugmentOp::kTranslateY, -2.0);
  EXPECT_TRUE(same_pixels(up(cv::Rect(0, 0, 20, 8)), in(cv::Rect(0, 2, 20, 8))));
  EXPECT_EQ(cv::countNonZero(up(cv::Rect(0, 8, 20, 2)).reshape(1)), 0);
}

TEST(AugmentOpsTest, RotateByNinetyDegreesIsCounterClockwise) {
  const cv::Mat in = noise_image(16, 16, 4);
  cv::Mat want;
  cv::rotate(in, want, cv::ROTATE_90_COUNTERCLOCKWISE);
  EXPECT_TRUE(same_pixels(apply_augment_op(in, AugmentOp::kRotate, 90.0), want));
}

TEST(AugmentOpsTest, ShearXSlidesEachRowByItsDistanceFromTheTop) {
  const cv::Mat in = gradient_image(30, 8);
  const cv::Mat out = apply_augment_op(in, AugmentOp::kShearX, 0.5);
  // Output (x, y) samples input (x + 0.5 y, y): row 0 stays, row 2 moves by 1.
  EXPECT_TRUE(same_pixels(out.row(0), in.row(0)));
  EXPECT_TRUE(same_pixels(out(cv::Rect(0, 2, 29, 1)), in(cv::Rect(1, 2, 29, 1))));
  EXPECT_TRUE(same_pixels(out(cv::Rect(0, 6, 27, 1)), in(cv::Rect(3, 6, 27, 1))));
  const cv::Mat down = apply_augment_op(in, AugmentOp::kShearY, 0.25);
  EXPECT_TRUE(same_pixels(down.col(0), in.col(0)));
  EXPECT_TRUE(same_pixels(down(cv::Rect(8, 0, 1, 6)), in(cv::Rect(8, 2, 1, 6))));
}

TEST(AugmentOpsTest, EveryOpKeepsSizeAndTypeForOneAndThreeChannels) {
  for (const cv::Mat& in : {noise_image(13, 11, 5), noise_image(13, 11, 6).reshape(1)}) {
    for (int i = 0; i < kAugmentOpCount; ++i) {
      const auto op = static_cast<AugmentOp>(i);
      const cv::Mat out = apply_augment_op(in, op, 0.3);
      EXPECT_EQ(out.size(), in.size()) << augment_op_name(op);
      EXPECT_EQ(out.type(), in.type()) << augment_op_name(op);
    }
  }
}

TEST(AugmentOpsTest, OtherImageTypesAreDataErrors) {
  EXPECT_THROW(apply_augment_op(cv::Mat(4, 4, CV_32FC3), AugmentOp::kEqualize, 0),
               DataError);
  EXPECT_THROW(apply_augment_op(cv::Mat(4, 4, CV_8UC4), AugmentOp::kRotate, 10),
               DataError);
}

}  // namespace
}  // namespace seedloader
