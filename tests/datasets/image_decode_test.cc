#include "loader/datasets/image_decode.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "seedloader/error.h"
#include "seedloader/seed_sequence.h"
#include "seedloader/transforms/compose.h"
#include "transforms/crop.h"

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

TEST(ImageDecodeTest, ImageOpenCvRefusesToDecodeIsADataErrorNotACvException) {
  // Found by tests/fuzz (image_decode_fuzzer): a 3x1048581 BMP is under the pixel
  // cap, but OpenCV's imdecode asserts on the height (cv::Exception) instead of
  // returning an empty image.
  const std::uint8_t bmp[] = {'B',  'M',  0x72, 0,    0,    0,    0,    0,    0,    0,
                              0x36, 0,    0,    0,    0x28, 0,    0,    0,    3,    0,
                              0,    0,    0x05, 0,    0x10, 0,    1,    0,    0x18, 0,
                              0,    0,    0,    0,    0,    0,    0x74, 0x81, 0x61, 0x6e,
                              0x7b, 0x88, 0x34, 0x41, 0x4e, 0x5b, 0x68, 0,    0,    0};
  const ImageHeader h = probe_image(bmp, kDefaultMaxPixels);
  ASSERT_EQ(h.height, 1048581);
  EXPECT_THROW(decode_image(bmp, h, 1, 3), DataError);
}

TEST(ImageDecodeTest, WebpThatLibwebpCannotReadIsADataErrorNotAnAbort) {
  // Found by tests/fuzz (image_decode_fuzzer): RIFF/WEBP bytes whose features
  // libwebp cannot read. OpenCV's WebP decoder does not claim them, imdecode tries
  // its other decoders, and Debian's DICOM one (GDCM) aborted the process.
  const std::vector<std::uint8_t> webp = {
      0x52, 0x49, 0x46, 0x46, 0x2c, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50,
      0x38, 0x20, 0x56, 0x50, 0x38, 0x4c, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x21, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83,
      0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x83, 0x1f, 0x56,
      0x50, 0x3a, 0x44, 0x49, 0x43, 0x4d, 0x9b, 0xb7, 0x3d,
  };
  const ImageHeader h = probe_image(webp, kDefaultMaxPixels);
  EXPECT_THROW(decode_image(webp, h, 1, 3), DataError);
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

TEST(ImageDecodeTest, CmykJpegDecodesToTheRgbOpenCvGives) {
  // A CMYK JPEG as Photoshop writes them, made with turbojpeg's compressor.
  cv::Mat cmyk(16, 24, CV_8UC4);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 24; ++x) {
      cmyk.at<cv::Vec4b>(y, x) =
          cv::Vec4b(static_cast<uchar>(10 * x), static_cast<uchar>(15 * y), 128,
                    static_cast<uchar>(200 + x));
    }
  }
  tjhandle compressor = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(compressor, cmyk.data, 24, static_cast<int>(cmyk.step), 16,
                        TJPF_CMYK, &jpeg, &size, TJSAMP_444, 95, 0),
            0);
  const std::vector<std::uint8_t> bytes(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(compressor);
  const ImageHeader h = probe_image(bytes, kDefaultMaxPixels);
  ASSERT_TRUE(h.cmyk);
  cv::Mat rgb = decode_image(bytes, h, 1, 3);
  cv::Mat reference;
  cv::cvtColor(cv::imdecode(bytes, cv::IMREAD_COLOR), reference, cv::COLOR_BGR2RGB);
  ASSERT_EQ(rgb.size(), reference.size());
  EXPECT_LE(cv::norm(rgb, reference, cv::NORM_INF), 1);
}

TEST(ImageDecodeTest, LargeRandomResizedCropDecodesTheJpegAtReducedScale) {
  const auto bytes = encode(bgr_image(1024, 1024), ".jpg");
  Compose chain;
  chain.add(RandomResizedCrop(cv::Size(64, 64), {0.6, 1.0}));
  const EncodedImage source(bytes, kDefaultMaxPixels, 3);
  Rng planned{SeedSequence(3)};
  Rng full = planned;
  int reduction = 0;
  const cv::Mat out = chain.apply(source, planned, nullptr, &reduction);
  const cv::Mat reference = chain.apply(source.decode(1), full, nullptr);
  EXPECT_EQ(reduction, 8);  // a window of >= 793 px for a 64 px output
  EXPECT_TRUE(planned == full);
  ASSERT_EQ(out.size(), cv::Size(64, 64));
  EXPECT_LT(cv::norm(out, reference, cv::NORM_L1) / out.total() / 3, 4.0);
}

TEST(ImageDecodeTest, ImageExtensionsAreRecognisedInAnyCase) {
  EXPECT_TRUE(is_image_extension(".JPG"));
  EXPECT_TRUE(is_image_extension("webp"));
  EXPECT_FALSE(is_image_extension(".txt"));
}

}  // namespace
}  // namespace seedloader
