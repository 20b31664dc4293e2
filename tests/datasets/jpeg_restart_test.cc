// Restart markers in every MCU row: the rewrite is lossless, a window decoded from
// the restart intervals around it equals the window of the whole image at every
// DCT scale and chroma subsampling, and an index that disagrees with its JPEG is
// an error.
#include "loader/datasets/jpeg_restart.h"

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "loader/datasets/image_decode.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

// A smooth random image (blurred noise, so the JPEG has real detail at every
// frequency) encoded by libturbojpeg with the given subsampling.
std::vector<std::uint8_t> photo_jpeg(int w, int h, int subsampling, int flags = 0,
                                     int seed = 1) {
  cv::Mat image(h, w, CV_8UC3);
  cv::RNG rng(static_cast<std::uint64_t>(seed));
  rng.fill(image, cv::RNG::UNIFORM, 0, 255);
  cv::GaussianBlur(image, image, {7, 7}, 2);
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(tj, image.data, w, 0, h, TJPF_RGB, &out, &size, subsampling, 90, flags);
  std::vector<std::uint8_t> bytes;
  if (rc == 0) bytes.assign(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  EXPECT_EQ(rc, 0);
  return bytes;
}

struct Case {
  const char* name;
  int subsampling;
  int width, height;
};

const Case kCases[] = {
    {"4:2:0", TJSAMP_420, 333, 251},     {"4:2:2", TJSAMP_422, 200, 123},
    {"4:4:4", TJSAMP_444, 97, 170},      {"4:4:0", TJSAMP_440, 150, 77},
    {"grey", TJSAMP_GRAY, 121, 99},      {"4:2:0 one row", TJSAMP_420, 40, 9},
    {"4:2:0 wide", TJSAMP_420, 640, 90},
};

cv::Mat decoded(std::span<const std::uint8_t> jpeg, int reduction, int channels) {
  return decode_image(jpeg, probe_image(jpeg, kDefaultMaxPixels), reduction, channels);
}

bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() &&
         cv::norm(a, b, cv::NORM_INF) == 0;
}

TEST(JpegRestartTest, TheRewriteDecodesToTheSamePixels) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto original = photo_jpeg(c.width, c.height, c.subsampling);
    std::string why;
    const auto restarted = add_restarts(original, &why);
    ASSERT_TRUE(restarted.has_value()) << why;
    const RestartIndex& x = restarted->index;
    const int mcu = c.subsampling == TJSAMP_GRAY ? 8 : tjMCUHeight[c.subsampling];
    EXPECT_EQ(x.mcu_height, static_cast<std::uint32_t>(mcu));
    EXPECT_EQ(x.mcu_rows, static_cast<std::uint32_t>((c.height + mcu - 1) / mcu));
    EXPECT_EQ(x.markers.size() + 1, x.intervals());
    EXPECT_EQ(x.interval_mcus * x.intervals_per_row,
              static_cast<std::uint32_t>((c.width + x.mcu_width - 1) / x.mcu_width));
    for (int channels : {1, 3}) {
      for (int reduction : {1, 2, 4, 8}) {
        EXPECT_TRUE(same_pixels(decoded(original, reduction, channels),
                                decoded(restarted->jpeg, reduction, channels)))
            << "reduction " << reduction << ", " << channels << " channels";
      }
    }
    // The index survives its own format.
    const RestartIndex back = decode_restart_index(encode_restart_index(x));
    EXPECT_EQ(back.markers, x.markers);
    EXPECT_EQ(back.scan_start, x.scan_start);
    EXPECT_EQ(back.scan_end, x.scan_end);
  }
}

TEST(JpegRestartTest, TheIntervalsCutEachRowInAboutSixteen) {
  // 640 pixels of 4:2:0: 40 MCUs a row, in 20 intervals of 2.
  const auto wide = add_restarts(photo_jpeg(640, 90, TJSAMP_420), nullptr);
  ASSERT_TRUE(wide.has_value());
  EXPECT_EQ(wide->index.interval_mcus, 2u);
  EXPECT_EQ(wide->index.intervals_per_row, 20u);
  EXPECT_EQ(wide->index.markers.size(), 6u * 20u - 1u);
  // 1072 pixels: 67 MCUs, a prime, with no divisor from 2 to 8: one interval a row.
  const auto prime = add_restarts(photo_jpeg(1072, 16, TJSAMP_420), nullptr);
  ASSERT_TRUE(prime.has_value());
  EXPECT_EQ(prime->index.interval_mcus, 67u);
  EXPECT_EQ(prime->index.intervals_per_row, 1u);
}

TEST(JpegRestartTest, AWindowFromItsIntervalsEqualsTheWindowOfTheWholeImage) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto restarted =
        add_restarts(photo_jpeg(c.width, c.height, c.subsampling), nullptr);
    ASSERT_TRUE(restarted.has_value());
    const std::vector<std::uint8_t> index = encode_restart_index(restarted->index);
    const EncodedImage whole(restarted->jpeg, kDefaultMaxPixels, 3);
    const EncodedImage rows(restarted->jpeg, kDefaultMaxPixels, 3, index);
    const int w = c.width, h = c.height;
    const std::vector<cv::Rect> regions = {
        {0, 0, w, h},                      // all of it
        {w / 4, h / 3, w / 2, h / 3},      // the middle
        {1, 0, w - 1, 5},                  // the top rows
        {0, h - 7, w / 3, 7},              // the bottom rows, at the left
        {w / 2, h / 2 - 1, w / 2 - 1, 2},  // two rows across an MCU boundary
        {w - 3, 17 % h, 3, std::min(h - 17 % h, 30)},
    };
    for (int channels : {1, 3}) {
      const EncodedImage whole_c(restarted->jpeg, kDefaultMaxPixels, channels);
      const EncodedImage rows_c(restarted->jpeg, kDefaultMaxPixels, channels, index);
      for (int reduction : {1, 2, 4, 8}) {
        for (const cv::Rect& region : regions) {
          SCOPED_TRACE(std::to_string(reduction) + " " + std::to_string(channels) + " " +
                       std::to_string(region.x) + "," + std::to_string(region.y) + " " +
                       std::to_string(region.width) + "x" +
                       std::to_string(region.height));
          cv::Rect crop_whole, crop_rows;
          const cv::Mat a = whole_c.decode_region(reduction, region, &crop_whole);
          const cv::Mat b = rows_c.decode_region(reduction, region, &crop_rows);
          ASSERT_EQ(crop_whole, crop_rows);
          EXPECT_TRUE(same_pixels(a(crop_whole), b(crop_rows)));
        }
      }
    }
    (void)whole;
    (void)rows;
    // A band in the middle of a tall enough image is sliced from fewer rows.
    const RestartIndex& x = restarted->index;
    const int mcu = static_cast<int>(x.mcu_height);
    if (h >= 6 * mcu) {
      const JpegSlice band = slice_jpeg(restarted->jpeg, x, 0, 3 * mcu, w, 3 * mcu + 1);
      EXPECT_EQ(band.x, 0);
      EXPECT_EQ(band.y, 2 * mcu);
      EXPECT_LT(band.jpeg.size(), restarted->jpeg.size() * 3 / 4);
      EXPECT_EQ(probe_image(band.jpeg, kDefaultMaxPixels).height, 3 * mcu);
    }
    // And a narrow window of a wide one from the intervals around it: one MCU of
    // context on each side, rounded out to whole intervals.
    if (x.intervals_per_row >= 5) {
      const int span = static_cast<int>(x.interval_mcus * x.mcu_width);
      const int mcu_w = static_cast<int>(x.mcu_width);
      const int x0 = w / 2, x1 = w / 2 + 10;
      const int c0 = (x0 - mcu_w) / span, c1 = (x1 - 1 + mcu_w) / span;
      ASSERT_LT(c1, static_cast<int>(x.intervals_per_row) - 1);
      const JpegSlice column = slice_jpeg(restarted->jpeg, x, x0, 0, x1, h);
      EXPECT_EQ(column.x, c0 * span);
      const ImageHeader sliced = probe_image(column.jpeg, kDefaultMaxPixels);
      EXPECT_EQ(sliced.width, (c1 - c0 + 1) * span);
      EXPECT_EQ(sliced.height, h);
      EXPECT_LT(column.jpeg.size(), restarted->jpeg.size() / 2);
    }
  }
}

TEST(JpegRestartTest, ProgressiveAndCmykJpegsAreLeftAsTheyAre) {
  std::string why;
  EXPECT_FALSE(
      add_restarts(photo_jpeg(64, 48, TJSAMP_420, TJFLAG_PROGRESSIVE), &why).has_value());
  EXPECT_EQ(why, "progressive");
  const std::vector<std::uint8_t> junk = {0xFF, 0xD8, 0xFF, 0xD9};
  EXPECT_THROW(add_restarts(junk, &why), DataError);
}

// The message of the DataError that decoding `region` with `index` throws.
std::string slice_error(const std::vector<std::uint8_t>& jpeg,
                        const std::vector<std::uint8_t>& index, cv::Rect region) {
  try {
    const EncodedImage image(jpeg, kDefaultMaxPixels, 3, index);
    cv::Rect crop;
    image.decode_region(1, region, &crop);
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JpegRestartTest, AnIndexThatDisagreesWithItsJpegIsAnError) {
  const auto r = add_restarts(photo_jpeg(160, 160, TJSAMP_420), nullptr);
  ASSERT_TRUE(r.has_value());
  const cv::Rect middle(10, 70, 100, 30);
  const std::vector<std::uint8_t> good = encode_restart_index(r->index);
  EXPECT_EQ(slice_error(r->jpeg, good, middle), "(no error)");

  // A marker the window's slice uses: after the second interval of MCU row 4
  // (pixel rows 64..79).
  const std::uint32_t k = 4 * r->index.intervals_per_row + 1;
  RestartIndex moved = r->index;
  moved.markers[k] += 1;
  EXPECT_NE(slice_error(r->jpeg, encode_restart_index(moved), middle)
                .find("restart marker " + std::to_string(k) + " is not at offset"),
            std::string::npos);

  std::vector<std::uint8_t> cut = good;
  cut.resize(cut.size() - 4);
  EXPECT_NE(slice_error(r->jpeg, cut, middle).find("do not hold"), std::string::npos);

  std::vector<std::uint8_t> magic = good;
  magic[0] = 'X';
  EXPECT_NE(slice_error(r->jpeg, magic, middle).find("SLRI"), std::string::npos);

  // Another image's index.
  const auto other = add_restarts(photo_jpeg(160, 96, TJSAMP_420), nullptr);
  EXPECT_NE(
      slice_error(r->jpeg, encode_restart_index(other->index), middle).find("MCU rows"),
      std::string::npos);

  // The index of the JPEG without restart markers it was made from.
  const auto plain = photo_jpeg(160, 160, TJSAMP_420);
  EXPECT_NE(slice_error(plain, good, middle).find("restart"), std::string::npos);

  // Damaged entropy-coded data inside the rows read: an error, not grey pixels.
  std::vector<std::uint8_t> damaged = r->jpeg;
  for (std::uint32_t at = r->index.markers[k - 1] + 2; at < r->index.markers[k]; ++at)
    if (damaged[at] != 0xFF && damaged[at - 1] != 0xFF) damaged[at] = 0xFF;
  EXPECT_NE(slice_error(damaged, good, middle), "(no error)");
}

// An index whose every marker the window uses is a real restart marker numbered
// right mod 8, but 8 intervals away from its own: only counting the markers from
// the scan's start tells it from the true one, and it would otherwise cut the
// JPEG into intervals that decode, without error, to another part of the image.
TEST(JpegRestartTest, AMarkerEightIntervalsAwayIsAnError) {
  const auto r = add_restarts(photo_jpeg(160, 160, TJSAMP_420), nullptr);
  ASSERT_TRUE(r.has_value());
  const RestartIndex& x = r->index;
  const std::vector<std::uint32_t>& real = x.markers;
  const std::size_t n = real.size();
  ASSERT_GE(n, 40u);
  // The window's slice starts at MCU row 3, interval 0, so the first marker it
  // checks ends the interval before: the last of MCU row 2.
  const cv::Rect middle(10, 70, 100, 30);
  const std::uint32_t first_used = 3 * x.intervals_per_row - 1;

  // Each marker k at the offset of marker k + 8; the last 8, which no marker
  // follows, on bytes of the last interval (unused by the window, and in order).
  RestartIndex ahead = x;
  for (std::size_t k = 0; k < n; ++k)
    ahead.markers[k] = k + 8 < n
                           ? real[k + 8]
                           : real[n - 1] + 2 + 2 * static_cast<std::uint32_t>(k + 8 - n);
  ASSERT_LT(ahead.markers[n - 1] + 2, x.scan_end);
  EXPECT_NE(slice_error(r->jpeg, encode_restart_index(ahead), middle)
                .find("restart marker " + std::to_string(first_used) +
                      " is not at offset " + std::to_string(real[first_used + 8]) +
                      " but at offset " + std::to_string(real[first_used])),
            std::string::npos)
      << slice_error(r->jpeg, encode_restart_index(ahead), middle);

  // Each marker k at the offset of marker k - 8; the first 8 on bytes of the
  // first interval.
  RestartIndex behind = x;
  for (std::size_t k = 0; k < n; ++k)
    behind.markers[k] =
        k >= 8 ? real[k - 8] : x.scan_start + 2 * static_cast<std::uint32_t>(k);
  ASSERT_LT(behind.markers[7] + 2, real[0]);
  EXPECT_NE(slice_error(r->jpeg, encode_restart_index(behind), middle)
                .find("restart marker " + std::to_string(first_used) +
                      " is not at offset " + std::to_string(real[first_used - 8]) +
                      ", which holds restart marker " + std::to_string(first_used - 8)),
            std::string::npos)
      << slice_error(r->jpeg, encode_restart_index(behind), middle);

  // The same through slice_jpeg, for a window that needs the last interval.
  EXPECT_THROW(slice_jpeg(r->jpeg, ahead, 150, 150, 160, 160), DataError);
  EXPECT_THROW(slice_jpeg(r->jpeg, behind, 150, 150, 160, 160), DataError);
}

}  // namespace
}  // namespace seedloader
