#include "seedloader/datasets/synthetic.h"

#include <gtest/gtest.h>

#include "seedloader/transforms/spec.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::SampleBuffer;
using testing::test_rng;

TEST(SyntheticTest, ImagesAreAPureFunctionOfTheIndex) {
  Synthetic a(100, 20, 30, 3), b(100, 20, 30, 3);
  EXPECT_EQ(cv::norm(a.image(42), b.image(42), cv::NORM_INF), 0);
  EXPECT_GT(cv::norm(a.image(42), a.image(43), cv::NORM_L1), 0);
  EXPECT_EQ(a.image(7).size(), cv::Size(30, 20));
}

TEST(SyntheticTest, GetWritesTheImageScaledAndTheLabel) {
  Synthetic data(50, 6, 5, 1, parse_transform_spec(""), 7);
  EXPECT_EQ(data.layout().field(0).shape, (std::vector<std::int64_t>{1, 6, 5}));
  SampleBuffer buffer(data.layout(), 23);
  Rng rng = test_rng();
  data.get(23, rng, buffer.writer());
  EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 23 % 7);
  const cv::Mat image = data.image(23);
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 5; ++x) {
      ASSERT_FLOAT_EQ(buffer.field<float>(0)[y * 5 + x], image.at<uchar>(y, x) / 255.0f);
    }
  }
}

TEST(SyntheticTest, InvalidShapesAreConfigErrors) {
  EXPECT_THROW(Synthetic(0, 4, 4, 3), ConfigError);
  EXPECT_THROW(Synthetic(4, 4, 4, 2), ConfigError);
  EXPECT_NE(testing::get_error(Synthetic(4, 4, 4, 3), 4).find("out of range"),
            std::string::npos);
}

}  // namespace
}  // namespace seedloader
