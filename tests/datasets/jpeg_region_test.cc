// Region-of-interest JPEG decoding: the window equals the same window of a full
// decode, at every DCT scale, and damage outside the window is still an error.
#include "loader/datasets/jpeg_region.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "loader/datasets/image_decode.h"
#include "loader/worker_hooks.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/error.h"
#include "seedloader/transforms/transform.h"

namespace seedloader {
namespace {

std::vector<std::uint8_t> noisy_jpeg(int w, int h) {
  cv::Mat image(h, w, CV_8UC3);
  cv::randu(image, 0, 255);
  cv::GaussianBlur(image, image, {9, 9}, 3);
  std::vector<std::uint8_t> out;
  EXPECT_TRUE(cv::imencode(".jpg", image, out, {cv::IMWRITE_JPEG_QUALITY, 90}));
  return out;
}

TEST(JpegRegionTest, WindowEqualsTheSameWindowOfAFullDecodeAtEveryScale) {
  const auto bytes = noisy_jpeg(640, 480);
  const ImageHeader header = probe_image(bytes, kDefaultMaxPixels);
  for (int reduction : {1, 2, 4, 8}) {
    const cv::Mat full = decode_image(bytes, header, reduction, 3);
    for (cv::Rect region : {cv::Rect(0, 0, 640, 480), cv::Rect(101, 37, 300, 211),
                            cv::Rect(333, 250, 307, 230), cv::Rect(17, 400, 64, 80)}) {
      SCOPED_TRACE("reduction " + std::to_string(reduction) + " region " +
                   std::to_string(region.x) + "," + std::to_string(region.y));
      const JpegRegion window = decode_jpeg_region(bytes, reduction, region, 3);
      const cv::Rect expected = scale_region(region, reduction, full.size());
      ASSERT_EQ(window.crop.size(), expected.size());
      // Only the rows of the window are decoded; columns widen to an iMCU edge.
      EXPECT_EQ(window.pixels.rows, expected.height);
      EXPECT_LE(window.pixels.cols, full.cols);
      EXPECT_EQ(cv::norm(window.pixels(window.crop), full(expected), cv::NORM_INF), 0.0);
    }
  }
}

TEST(JpegRegionTest, GreyOutputMatchesFullGreyDecode) {
  const auto bytes = noisy_jpeg(200, 150);
  const cv::Mat full = decode_image(bytes, probe_image(bytes, kDefaultMaxPixels), 1, 1);
  const cv::Rect region(30, 20, 100, 90);
  const JpegRegion window = decode_jpeg_region(bytes, 1, region, 1);
  ASSERT_EQ(window.pixels.channels(), 1);
  EXPECT_EQ(cv::norm(window.pixels(window.crop), full(region), cv::NORM_INF), 0.0);
}

TEST(JpegRegionTest, TruncationBelowTheWindowIsStillAnError) {
  auto bytes = noisy_jpeg(320, 240);
  bytes.resize(bytes.size() * 2 / 3);
  try {
    decode_jpeg_region(bytes, 1, cv::Rect(0, 0, 40, 40), 3);
    FAIL() << "a truncated JPEG decoded without error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(JpegRegionTest, EveryCutBeforeTheEndMarkerIsAnErrorForATopWindow) {
  const auto whole = noisy_jpeg(320, 240);
  for (std::size_t cut : {std::size_t{1}, std::size_t{2}, whole.size() / 2}) {
    const std::vector<std::uint8_t> bytes(whole.begin(), whole.end() - cut);
    EXPECT_THROW(decode_jpeg_region(bytes, 1, cv::Rect(0, 0, 16, 16), 3), DataError)
        << cut;
  }
}

TEST(JpegRegionTest, BytesAfterTheEndMarkerAreAllowed) {
  auto bytes = noisy_jpeg(320, 240);
  const JpegRegion plain = decode_jpeg_region(bytes, 1, cv::Rect(8, 8, 64, 64), 3);
  const cv::Mat want = plain.pixels.clone();
  bytes.insert(bytes.end(), {0x00, 0x12, 0xFF, 0x00});
  const JpegRegion padded = decode_jpeg_region(bytes, 1, cv::Rect(8, 8, 64, 64), 3);
  EXPECT_EQ(cv::norm(padded.pixels, want, cv::NORM_INF), 0);
}

TEST(JpegRegionTest, AResultStillHeldIsNotOverwrittenByTheNextDecode) {
  const auto a = noisy_jpeg(320, 240);
  const auto b = noisy_jpeg(200, 100);
  const JpegRegion first = decode_jpeg_region(a, 1, cv::Rect(0, 0, 64, 64), 3);
  const cv::Mat copy = first.pixels.clone();
  const JpegRegion second = decode_jpeg_region(b, 1, cv::Rect(0, 0, 64, 64), 3);
  EXPECT_NE(first.pixels.data, second.pixels.data);
  EXPECT_EQ(cv::norm(first.pixels, copy, cv::NORM_INF), 0);
}

TEST(JpegRegionTest, EncodedImageDecodesOnlyTheWindowForJpeg) {
  const auto bytes = noisy_jpeg(640, 480);
  const EncodedImage source(bytes, kDefaultMaxPixels, 3);
  cv::Rect crop;
  const cv::Mat window = source.decode_region(2, cv::Rect(100, 100, 200, 100), &crop);
  EXPECT_EQ(window.rows, 50);  // rows 50..99 of the half-size image
  EXPECT_LT(window.cols, 320);
  EXPECT_EQ(crop.size(), cv::Size(100, 50));
}

TEST(JpegRegionTest, ImageDatasetsCapOpenCvToOneThreadInWorkers) {
  Synthetic dataset(4, 8, 8, 3, Compose());
  (void)dataset;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    cv::setNumThreads(2);
    run_worker_start_hooks();
    _exit(cv::getNumThreads() == 1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "the worker start hooks left OpenCV multi-threaded";
}

}  // namespace
}  // namespace seedloader
