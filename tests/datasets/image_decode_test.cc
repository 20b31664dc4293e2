#include "loader/datasets/image_decode.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "rng/error.h"

namespace seedloader {
namespace {

// A smooth BGR image (as OpenCV writes) with some structure.
cv::Mat bgr_image(int w, int h) {
  cv::Mat image(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / w),
                                            static_cast<uchar>(y * 255 / h), 128);
    }
  }
  return image;
}

std::vector<std::uint8_t> encode(const cv::Mat& image, const std::string& ext) {
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(cv::imencode(ext, image, out));
  return out;
}

std::string decode_error(const std::vector<std::uint8_t>& bytes,
                         std::uint64_t cap = kDefaultMaxPixels) {
  try {
    ImageHeader h = probe_image(bytes, cap);
    decode_image(bytes, h, 1, 3);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(ImageDecodeTest, PngDecodesToTheSameRgbPixels) {
  const cv::Mat bgr = bgr_image(31, 17);
  const auto bytes = encode(bgr, ".png");
  const ImageHeader h = probe_image(bytes, kDefaultMaxPixels);
  EXPECT_EQ(h.format, ImageFormat::kPng);
  cv::Mat rgb = decode_image(bytes, h, 1, 3);
  cv::Mat want;
  cv::cvtColor(bgr, want, cv::COLOR_BGR2RGB);
  EXPECT_EQ(cv::norm(rgb, want, cv::NORM_INF), 0);
}

TEST(ImageDecodeTest, JpegDecodesCloseToOpenCvInRgbOrder) {
  const auto bytes = encode(bgr_image(64, 48), ".jpg");
  const ImageHeader h = probe_image(bytes, kDefaultMaxPixels);
  ASSERT_EQ(h.format, ImageFormat::kJpeg);
  EXPECT_EQ(cv::Size(h.width, h.height), cv::Size(64, 48));
  cv::Mat rgb = decode_image(bytes, h, 1, 3);
  cv::Mat reference;
  cv::cvtColor(cv::imdecode(bytes, cv::IMREAD_COLOR), reference, cv::COLOR_BGR2RGB);
  EXPECT_LE(cv::norm(rgb, reference, cv::NORM_INF), 4);
}

TEST(ImageDecodeTest, JpegReducedScaleHasCeilSizeAndMatchesAShrunkFullDecode) {
  const auto bytes = encode(bgr_image(250, 130), ".jpg");
  const ImageHeader h = probe_image(bytes, kDefaultMaxPixels);
  cv::Mat full = decode_image(bytes, h, 1, 3);
  for (int r : {2, 4, 8}) {
    cv::Mat small = decode_image(bytes, h, r, 3);
    ASSERT_EQ(small.size(), cv::Size((250 + r - 1) / r, (130 + r - 1) / r)) << r;
    cv::Mat shrunk;
    cv::resize(full, shrunk, small.size(), 0, 0, cv::INTER_AREA);
    EXPECT_LT(cv::norm(small, shrunk, cv::NORM_L1) / small.total() / 3, 6.0) << r;
  }
}

TEST(ImageDecodeTest, TruncatedJpegIsAnErrorWhereOpenCvReturnsAGreyFilledImage) {
  auto bytes = encode(bgr_image(128, 128), ".jpg");
  bytes.resize(bytes.size() / 2);
  // OpenCV accepts the truncated file: that is what must not pass silently.
  ASSERT_FALSE(cv::imdecode(bytes, cv::IMREAD_COLOR).empty());
  EXPECT_NE(decode_error(bytes).find("JPEG"), std::string::npos);
}

TEST(ImageDecodeTest, PngWithABrokenCrcIsAnError) {
  auto bytes = encode(bgr_image(20, 20), ".png");
  bytes[bytes.size() - 20] ^= 0x55;  // inside IDAT data: its CRC no longer matches
  EXPECT_NE(decode_error(bytes).find("bad CRC"), std::string::npos);
}

TEST(ImageDecodeTest, TruncatedPngIsAnError) {
  auto bytes = encode(bgr_image(20, 20), ".png");
  bytes.resize(bytes.size() - 30);
  EXPECT_NE(decode_error(bytes).find("truncated PNG"), std::string::npos);
}

TEST(ImageDecodeTest, ZeroByteAndNonImageInputAreErrors) {
  EXPECT_NE(decode_error({}).find("0 bytes"), std::string::npos);
  const std::string text = "this is a text file, not an image";
  EXPECT_NE(decode_error({text.begin(), text.end()}).find("not an image"),
            std::string::npos);
}

TEST(ImageDecodeTest, HeadersClaiming65535SquaredPixelsAreRejectedBeforeDecoding) {
  auto png = encode(bgr_image(8, 8), ".png");
  for (int i : {16, 20}) {  // IHDR width and height, big-endian
    png[i] = 0;
    png[i + 1] = 0;
    png[i + 2] = 0xff;
    png[i + 3] = 0xff;
  }
  EXPECT_NE(decode_error(png).find("65535x65535"), std::string::npos);

  auto jpeg = encode(bgr_image(8, 8), ".jpg");
  std::size_t sof = 2;
  while (sof + 9 < jpeg.size() && !(jpeg[sof] == 0xff && jpeg[sof + 1] == 0xc0)) ++sof;
  ASSERT_LT(sof + 9, jpeg.size());
  for (std::size_t i = sof + 5; i < sof + 9; ++i) jpeg[i] = 0xff;  // height, width
  EXPECT_NE(decode_error(jpeg).find("JPEG"), std::string::npos);   // libjpeg's own limit
  for (std::size_t i = sof + 5; i < sof + 9; i += 2) {  // 60000 x 60000: under it
    jpeg[i] = 0xea;
    jpeg[i + 1] = 0x60;
  }
  EXPECT_NE(decode_error(jpeg).find("60000x60000"), std::string::npos)
      << decode_error(jpeg);
}

TEST(ImageDecodeTest, PixelCapIsConfigurable) {
  const auto bytes = encode(bgr_image(100, 100), ".png");
  EXPECT_NE(decode_error(bytes, 9999).find("above the cap of 9999"), std::string::npos);
  EXPECT_EQ(decode_error(bytes, 10000), "");
}

TEST(ImageDecodeTest, BmpAndWebpHeadersGiveTheirSize) {
  for (const char* ext : {".bmp", ".webp"}) {
    const auto bytes = encode(bgr_image(37, 23), ext);
    const ImageHeader h = probe_image(bytes, kDefaultMaxPixels);
    EXPECT_EQ(cv::Size(h.width, h.height), cv::Size(37, 23)) << ext;
    EXPECT_EQ(decode_image(bytes, h, 1, 3).size(), cv::Size(37, 23)) << ext;
  }
}

TEST(ImageDecodeTest, ImageExtensionsAreRecognisedInAnyCase) {
  EXPECT_TRUE(is_image_extension(".JPG"));
  EXPECT_TRUE(is_image_extension("webp"));
  EXPECT_FALSE(is_image_extension(".txt"));
}

}  // namespace
}  // namespace seedloader
