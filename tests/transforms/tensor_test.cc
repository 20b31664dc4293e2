#include "seedloader/transforms/tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include "seedloader/error.h"
#include "seedloader/half.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
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

namespace seedloader {
namespace {

// float16 / bfloat16 outputs are the float32 output, each value rounded.
TEST(ToTensorTest, HalfAndBfloat16OutputsAreTheFloat32OutputRounded) {
  const cv::Mat image = testing::gradient_image(9, 7);
  const std::size_t n = 3 * 9 * 7;
  std::vector<float> f32(n);
  ToTensor(Normalize::imagenet()).write(image, f32);
  std::vector<Float16> f16(n);
  std::vector<BFloat16> bf16(n);
  const ToTensor half(Normalize::imagenet(), ToTensor::Output::kFloat16);
  const ToTensor brain(Normalize::imagenet(), ToTensor::Output::kBFloat16);
  EXPECT_EQ(half.dtype(), DType::kF16);
  EXPECT_EQ(brain.dtype(), DType::kBF16);
  half.write(image, f16);
  brain.write(image, bf16);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(f16[i].bits, to_float16(f32[i]).bits) << i;
    ASSERT_EQ(bf16[i].bits, to_bfloat16(f32[i]).bits) << i;
  }
  EXPECT_THROW(half.write(image, f32), DataError);
  EXPECT_THROW(ToTensor(std::nullopt, ToTensor::Output::kUint8), ConfigError);
}

TEST(HalfTest, KnownValuesRoundToNearestEven) {
  EXPECT_EQ(to_float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(to_float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(to_float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(to_float16(65520.0f).bits, 0x7c00);  // the tie above 65504: infinity
  EXPECT_EQ(to_float16(65519.996f).bits, 0x7bff);
  EXPECT_EQ(to_float16(0x1p-24f).bits, 0x0001);         // the smallest subnormal
  EXPECT_EQ(to_float16(0x1p-25f).bits, 0x0000);         // its half: a tie, to even 0
  EXPECT_EQ(to_float16(0x1.8p-24f).bits, 0x0002);       // 1.5 units: a tie, to even 2
  EXPECT_EQ(to_float16(1.0f + 0x1p-11f).bits, 0x3c00);  // a tie between 1 and 1+2^-10
  EXPECT_EQ(to_float16(1.0f + 0x3p-11f).bits, 0x3c02);
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bfloat16(1.0f + 0x1p-8f).bits, 0x3f80);  // tie to even
  EXPECT_EQ(to_bfloat16(1.0f + 0x3p-8f).bits, 0x3f82);
  for (std::uint32_t b = 0; b < 0x10000; ++b) {  // every half but NaNs round-trips
    const Float16 h{static_cast<std::uint16_t>(b)};
    if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0) {
      EXPECT_TRUE(std::isnan(to_float(h)));
      continue;
    }
    ASSERT_EQ(to_float16(to_float(h)).bits, h.bits) << std::hex << b;
  }
}

// Against torch's own .half() and .bfloat16() on 200,000 floats of every kind.
TEST(HalfTest, ConversionsEqualTorchs) {
  SL_REQUIRE_PYTHON_MODULE("torch");
  std::mt19937 gen(11);
  std::vector<float> values = {0.0f,    -0.0f,    1e-8f,
                               6.1e-5f, 65504.0f, 65520.0f,
                               1e30f,   -1e30f,   std::numeric_limits<float>::infinity()};
  while (values.size() < 200000) {
    const float v = std::bit_cast<float>(static_cast<std::uint32_t>(gen()));
    if (!std::isnan(v)) values.push_back(v);
    // Values near half's range, where its rounding is busiest.
    values.push_back(std::ldexp(static_cast<float>(gen() % 100000) / 1000.0f,
                                static_cast<int>(gen() % 50) - 30));
  }
  const std::string dir = testing_util::process_temp_dir();
  {
    std::ofstream f(dir + "half_in", std::ios::binary);
    f.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  }
  const auto r = testing_util::run_command(
      "/usr/bin/python3 -c 'import sys, numpy as np, torch\n"
      "x = torch.from_numpy(np.fromfile(sys.argv[1], np.float32))\n"
      "x.half().view(torch.int16).numpy().tofile(sys.argv[1] + \".f16\")\n"
      "x.bfloat16().view(torch.int16).numpy().tofile(sys.argv[1] + \".bf16\")' " +
      dir + "half_in 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto read = [&](const std::string& path) {
    std::vector<std::uint16_t> bits(values.size());
    std::ifstream f(path, std::ios::binary);
    f.read(reinterpret_cast<char*>(bits.data()),
           static_cast<std::streamsize>(bits.size() * 2));
    EXPECT_EQ(f.gcount(), static_cast<std::streamsize>(bits.size() * 2)) << path;
    return bits;
  };
  const std::vector<std::uint16_t> f16 = read(dir + "half_in.f16");
  const std::vector<std::uint16_t> bf16 = read(dir + "half_in.bf16");
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(to_float16(values[i]).bits, f16[i]) << values[i];
    ASSERT_EQ(to_bfloat16(values[i]).bits, bf16[i]) << values[i];
  }
}

}  // namespace
}  // namespace seedloader
