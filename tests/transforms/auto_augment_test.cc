// The policies: their magnitude tables at known points, their draws in
// torchvision's order from the sample's stream, and their spec tokens.
#include "transforms/auto_augment.h"

#include <gtest/gtest.h>

#include "seedloader/random.h"
#include "seedloader/transforms/spec.h"
#include "tests/transforms/test_images.h"

namespace seedloader {
namespace {

using testing::noise_image;
using testing::same_pixels;
using testing::test_rng;

TEST(AutoAugmentTest, LinspaceHasTorchsFusedAndVectorRoundings) {
  // Printed by torch 1.13 (AVX2): torch.linspace(0, 32, n)[i].
  EXPECT_EQ(torch_linspace_at(0, 32, 10, 6), 21.333334f);   // fused, from the end
  EXPECT_EQ(torch_linspace_at(0, 32, 4, 2), 21.333332f);    // fused, from the end
  EXPECT_EQ(torch_linspace_at(0, 32, 16, 11), 23.466667f);  // in a vector of 8
  EXPECT_EQ(torch_linspace_at(0, 0.99f, 4, 2), 0.65999997f);
  EXPECT_EQ(torch_linspace_at(255, 0, 31, 0), 255.0f);
  EXPECT_EQ(torch_linspace_at(255, 0, 31, 30), 0.0f);
  EXPECT_EQ(torch_linspace_at(7, 9, 1, 0), 7.0f);
}

TEST(AutoAugmentTest, MagnitudeTablesHaveTheirEndsAndRanges) {
  const cv::Size size(331, 662);
  const auto ta = [&](AugmentOp op, int bin) {
    return augment_magnitude(AugmentPolicy::kTrivialAugmentWide, op, 31, bin, size);
  };
  const auto ra = [&](AugmentOp op, int bin) {
    return augment_magnitude(AugmentPolicy::kRandAugment, op, 31, bin, size);
  };
  EXPECT_EQ(ta(AugmentOp::kShearX, 30), static_cast<double>(0.99f));
  EXPECT_EQ(ta(AugmentOp::kTranslateY, 30), 32.0);
  EXPECT_EQ(ta(AugmentOp::kRotate, 30), 135.0);
  EXPECT_EQ(ta(AugmentOp::kPosterize, 0), 8.0);
  EXPECT_EQ(ta(AugmentOp::kPosterize, 30), 2.0);
  EXPECT_EQ(ta(AugmentOp::kSolarize, 0), 255.0);
  EXPECT_EQ(ta(AugmentOp::kRotate, 0), 0.0);
  EXPECT_EQ(ra(AugmentOp::kTranslateX, 30), 150.0);
  EXPECT_EQ(ra(AugmentOp::kTranslateY, 30), 300.0);
  EXPECT_EQ(ra(AugmentOp::kRotate, 30), 30.0);
  EXPECT_EQ(ra(AugmentOp::kPosterize, 30), 4.0);
  EXPECT_EQ(ra(AugmentOp::kBrightness, 30), static_cast<double>(0.9f));
  EXPECT_EQ(ra(AugmentOp::kEqualize, 9), 0.0);
  for (int bin = 0; bin < 31; ++bin) {
    EXPECT_GE(ta(AugmentOp::kPosterize, bin), 2) << bin;
    EXPECT_LE(ra(AugmentOp::kSolarize, bin), 255) << bin;
  }
}

// Replays TrivialAugmentWide's documented draws on a copy of the stream.
TEST(AutoAugmentTest, TrivialAugmentDrawsOpBinThenSignFromTheStream) {
  const cv::Mat image = noise_image(40, 30, 1);
  const TrivialAugmentWide policy(31);
  int negative = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    Rng rng = test_rng(seed), replay = test_rng(seed);
    TransformLog log;
    const cv::Mat out = policy.apply(image, rng, &log);
    const auto op = static_cast<AugmentOp>(bounded(replay, kAugmentOpCount));
    double magnitude = 0;
    if (augment_op_has_magnitudes(op)) {
      magnitude = augment_magnitude(AugmentPolicy::kTrivialAugmentWide, op, 31,
                                    static_cast<int>(bounded(replay, 31)), image.size());
    }
    if (augment_op_signed(op) && bounded(replay, 2) == 1) {
      magnitude = -magnitude;
      ++negative;
    }
    ASSERT_EQ(log.value("trivialaugment", "op"), static_cast<double>(op)) << seed;
    ASSERT_EQ(log.value("trivialaugment", "magnitude"), magnitude) << seed;
    ASSERT_EQ(rng(), replay()) << "the streams drew differently, seed " << seed;
    ASSERT_TRUE(same_pixels(out, apply_augment_op(image, op, magnitude))) << seed;
  }
  EXPECT_GT(negative, 50);
}

TEST(AutoAugmentTest, RandAugmentDrawsOpThenSignPerOpAtTheFixedBin) {
  const cv::Mat image = noise_image(40, 30, 2);
  const RandAugment policy(3, 12, 20);
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    Rng rng = test_rng(seed), replay = test_rng(seed);
    const cv::Mat out = policy.apply(image, rng, nullptr);
    cv::Mat want = image;
    for (int i = 0; i < 3; ++i) {
      const auto op = static_cast<AugmentOp>(bounded(replay, kAugmentOpCount));
      double magnitude =
          augment_magnitude(AugmentPolicy::kRandAugment, op, 20, 12, want.size());
      if (augment_op_signed(op) && bounded(replay, 2) == 1) magnitude = -magnitude;
      want = apply_augment_op(want, op, magnitude);
    }
    ASSERT_EQ(rng(), replay()) << seed;
    ASSERT_TRUE(same_pixels(out, want)) << seed;
  }
  // No ops: the image as it was, and nothing drawn.
  Rng a = test_rng(5), b = test_rng(5);
  EXPECT_TRUE(same_pixels(RandAugment(0, 9, 31).apply(image, a, nullptr), image));
  EXPECT_EQ(a(), b());
}

TEST(AutoAugmentTest, TheSameStreamGivesTheSamePixels) {
  const Compose chain = parse_transform_spec("trivialaugment,randaugment:2:9");
  const cv::Mat image = noise_image(33, 21, 3);
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    Rng a = test_rng(seed), b = test_rng(seed);
    EXPECT_TRUE(same_pixels(chain.apply(image.clone(), a, nullptr),
                            chain.apply(image.clone(), b, nullptr)));
  }
}

}  // namespace
}  // namespace seedloader
