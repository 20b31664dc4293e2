#include "seedloader/transforms/compose.h"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/transforms/test_images.h"
#include "transforms/crop.h"

namespace seedloader {
namespace {

using testing::gradient_image;
using testing::same_pixels;
using testing::test_rng;

// Holds the full image and "decodes" at reduced scale by area resizing, counting
// the reductions asked for.
class InMemorySource final : public ImageSource {
 public:
  explicit InMemorySource(cv::Mat image) : image_(std::move(image)) {}
  cv::Size size() const override { return image_.size(); }
  cv::Mat decode(int reduction) const override {
    last_reduction = reduction;
    if (reduction == 1) return image_;
    cv::Mat out;
    cv::resize(image_, out,
               cv::Size((image_.cols + reduction - 1) / reduction,
                        (image_.rows + reduction - 1) / reduction),
               0, 0, cv::INTER_AREA);
    return out;
  }
  mutable int last_reduction = 0;

 private:
  cv::Mat image_;
};

cv::Mat smooth_image(int size) {
  cv::Mat image(size, size, CV_8UC3);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / size),
                                            static_cast<uchar>(y * 255 / size),
                                            static_cast<uchar>((x + y) * 127 / size));
    }
  }
  return image;
}

TEST(ComposeTest, SameRngStateGivesTheSameOutputAndLog) {
  Compose chain = parse_transform_spec(
      "rrc:32,hflip,vflip,jitter:0.4:0.4:0.4:0.1,rotate:10,blur:3:0.1:1.5");
  const cv::Mat image = gradient_image(100, 80);
  Rng a = test_rng(7);
  Rng b = a;
  TransformLog log_a, log_b;
  cv::Mat out_a = chain.apply(image, a, &log_a);
  cv::Mat out_b = chain.apply(image, b, &log_b);
  EXPECT_TRUE(same_pixels(out_a, out_b));
  EXPECT_EQ(log_a.to_string(), log_b.to_string());
  EXPECT_TRUE(a == b);

  Rng other = test_rng(8);
  TransformLog log_c;
  chain.apply(image, other, &log_c);
  EXPECT_NE(log_a.to_string(), log_c.to_string());
}

TEST(ComposeTest, LargeCropDecodesAtReducedScaleFromTheSameDraws) {
  Compose chain;
  chain.add(RandomResizedCrop(cv::Size(64, 64), {0.6, 1.0}));
  const InMemorySource source(smooth_image(1024));
  Rng planned = test_rng(9);
  Rng full = planned;
  TransformLog log_planned, log_full;
  int reduction = 0;
  cv::Mat out = chain.apply(source, planned, &log_planned, &reduction);
  cv::Mat reference = chain.apply(smooth_image(1024), full, &log_full);
  EXPECT_EQ(reduction, 8);  // the window is >= 793 px: at least 8x the output
  EXPECT_EQ(source.last_reduction, 8);
  EXPECT_EQ(log_planned.to_string(), log_full.to_string());
  EXPECT_TRUE(planned == full);
  ASSERT_EQ(out.size(), reference.size());
  EXPECT_LT(cv::norm(out, reference, cv::NORM_L1) / out.total() / 3, 3.0);
}

TEST(ComposeTest, SmallCropDecodesAtFullScale) {
  Compose chain;
  chain.add(RandomResizedCrop(cv::Size(64, 64)));
  const InMemorySource source(smooth_image(100));
  Rng rng = test_rng(10);
  int reduction = 0;
  chain.apply(source, rng, nullptr, &reduction);
  EXPECT_EQ(reduction, 1);
}

// The header cap passes a 1x65000 image; the chain must still not resize it to
// 224x14560000.
TEST(ComposeTest, SpecResizeOfALongThinImageIsDataError) {
  const Compose chain = parse_transform_spec("resize:224");
  const cv::Mat image(65000, 1, CV_8UC3, cv::Scalar::all(9));
  Rng rng = test_rng(3);
  EXPECT_THROW(chain.apply(image, rng, nullptr), DataError);
  EXPECT_THROW(chain.output_size(cv::Size(1, 65000)), DataError);
  InMemorySource source(image);
  EXPECT_THROW(chain.apply(source, rng, nullptr), DataError);
}

TEST(ComposeTest, OutputSizeFollowsTheChain) {
  EXPECT_EQ(parse_transform_spec("resize:256,centercrop:224").output_size(),
            cv::Size(224, 224));
  EXPECT_EQ(parse_transform_spec("resize:256").output_size(), cv::Size(0, 0));
  EXPECT_EQ(parse_transform_spec("hflip").output_size(cv::Size(9, 7)), cv::Size(9, 7));
}

}  // namespace
}  // namespace seedloader
