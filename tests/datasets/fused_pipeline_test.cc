// The fused RandomResizedCrop path (Compose::write_fused: decode the window,
// resample, mirror and convert in one pass) against the same chain run step by
// step (Compose::apply, then ToTensor::write): the same bytes, the same draws and
// the same log, for every output type, with and without the flip, in colour and
// grey, from images small enough to decode at full scale and large enough to
// decode at 1/2, 1/4 and 1/8.
#include <gtest/gtest.h>

#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <vector>

#include "loader/datasets/image_decode.h"
#include "seedloader/error.h"
#include "seedloader/half.h"
#include "seedloader/transforms/spec.h"
#include "tests/transforms/test_images.h"
#include "transforms/crop.h"

namespace seedloader {
namespace {

std::vector<std::uint8_t> encode(const cv::Mat& rgb) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<std::uint8_t> bytes;
  cv::imencode(".jpg", bgr, bytes, {cv::IMWRITE_JPEG_QUALITY, 90});
  return bytes;
}

template <typename T>
void expect_fused_equals_steps(const char* spec, const std::vector<std::uint8_t>& jpeg,
                               int channels, std::set<int>* reductions) {
  const Compose chain = parse_transform_spec(spec);
  ASSERT_TRUE(chain.fuses()) << spec;
  const EncodedImage source(jpeg, kDefaultMaxPixels, channels);
  const cv::Size out = chain.output_size();
  const std::size_t n = std::size_t(channels) * out.area();
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    Rng fused_rng = testing::test_rng(seed);
    Rng step_rng = fused_rng;
    TransformLog fused_log;
    TransformLog step_log;
    std::vector<T> fused(n);
    std::vector<T> steps(n);
    chain.write_fused(source, fused_rng, &fused_log, std::span<T>(fused));
    int reduction = 0;
    const cv::Mat image = chain.apply(source, step_rng, &step_log, &reduction);
    reductions->insert(reduction);
    chain.output().write(image, std::span<T>(steps));
    ASSERT_EQ(std::memcmp(fused.data(), steps.data(), n * sizeof(T)), 0)
        << spec << " seed " << seed << " reduction " << reduction;
    EXPECT_TRUE(fused_rng == step_rng) << spec << " seed " << seed;
    EXPECT_EQ(fused_log.to_string(), step_log.to_string());
  }
}

class FusedPipelineTest : public ::testing::Test {
 protected:
  // Sizes that decode at full scale only (320x240), and up to 1/8 (1600x1200).
  std::vector<std::vector<std::uint8_t>> jpegs_ = {
      encode(testing::noise_image(320, 240, 3)),
      encode(testing::noise_image(500, 375, 4)),
      encode(testing::noise_image(1600, 1200, 5))};
};

TEST_F(FusedPipelineTest, EqualsTheStepsForEveryOutputType) {
  std::set<int> reductions;
  for (const auto& jpeg : jpegs_) {
    expect_fused_equals_steps<float>("rrc:224,hflip,normalize:imagenet", jpeg, 3,
                                     &reductions);
    expect_fused_equals_steps<float>("rrc:64,totensor", jpeg, 3, &reductions);
    expect_fused_equals_steps<Float16>("rrc:224,hflip,normalize:imagenet:f16", jpeg, 3,
                                       &reductions);
    expect_fused_equals_steps<BFloat16>("rrc:224,hflip:1,normalize:imagenet:bf16", jpeg,
                                        3, &reductions);
    expect_fused_equals_steps<std::uint8_t>("rrc:224,hflip,u8", jpeg, 3, &reductions);
    // An output width that is not a multiple of 8 leaves the vector store path.
    expect_fused_equals_steps<float>("rrc:101x37,hflip,normalize:imagenet", jpeg, 3,
                                     &reductions);
  }
  EXPECT_EQ(reductions, (std::set<int>{1, 2, 4, 8}));
}

TEST_F(FusedPipelineTest, EqualsTheStepsInGrey) {
  std::set<int> reductions;
  for (const auto& jpeg : jpegs_) {
    expect_fused_equals_steps<float>("rrc:224,hflip,normalize:0.5:0.25", jpeg, 1,
                                     &reductions);
    expect_fused_equals_steps<std::uint8_t>("rrc:57,u8", jpeg, 1, &reductions);
  }
}

TEST(FusedPipelineChainTest, OnlyACropWithAnOptionalHorizontalFlipFuses) {
  EXPECT_TRUE(parse_transform_spec("rrc:224").fuses());
  EXPECT_TRUE(parse_transform_spec("rrc:224,hflip:0.3").fuses());
  EXPECT_FALSE(parse_transform_spec("rrc:224,vflip").fuses());
  EXPECT_FALSE(parse_transform_spec("rrc:224,hflip,hflip").fuses());
  EXPECT_FALSE(parse_transform_spec("hflip,rrc:224").fuses());
  EXPECT_FALSE(parse_transform_spec("rrc:224,jitter:0.4:0.4:0.4:0").fuses());
  EXPECT_FALSE(parse_transform_spec("centercrop:224").fuses());
  const Compose other = parse_transform_spec("centercrop:8");
  const std::vector<std::uint8_t> jpeg = encode(testing::noise_image(32, 32, 1));
  const EncodedImage source(jpeg, kDefaultMaxPixels, 3);
  Rng rng = testing::test_rng(1);
  std::vector<float> out(3 * 64);
  EXPECT_THROW(other.write_fused(source, rng, nullptr, std::span<float>(out)),
               ConfigError);
}

TEST(FusedPipelineChainTest, AnOutputOfTheWrongSizeIsADataError) {
  const Compose chain = parse_transform_spec("rrc:16,hflip,normalize:imagenet");
  const std::vector<std::uint8_t> jpeg = encode(testing::noise_image(64, 48, 2));
  const EncodedImage source(jpeg, kDefaultMaxPixels, 3);
  Rng rng = testing::test_rng(2);
  std::vector<float> out(3 * 16 * 16 - 1);
  EXPECT_THROW(chain.write_fused(source, rng, nullptr, std::span<float>(out)), DataError);
}

}  // namespace
}  // namespace seedloader
