// torchvision's full IMG_EXTENSIONS in ImageFolder, and the Netpbm and TIFF
// decoding behind .ppm/.pgm/.tif/.tiff, held pixel for pixel to what
// torchvision's default loader (PIL, convert("RGB")) gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "loader/datasets/image_decode.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/transforms/spec.h"
#include "tests/common/cross_check.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::contains;
using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;
using testing::write_file;

using Bytes = std::vector<std::uint8_t>;

// A Netpbm file: `header` ("P5\n4 2\n255\n"), then the samples in 1 or 2 bytes
// (big-endian) each, or as decimal text when `bytes` is 0.
Bytes pnm(const std::string& header, const std::vector<std::uint32_t>& samples,
          int bytes) {
  Bytes out(header.begin(), header.end());
  for (std::uint32_t v : samples) {
    if (bytes == 0) {
      const std::string text = std::to_string(v) + " ";
      out.insert(out.end(), text.begin(), text.end());
    } else {
      if (bytes == 2) out.push_back(static_cast<std::uint8_t>(v >> 8));
      out.push_back(static_cast<std::uint8_t>(v));
    }
  }
  return out;
}

// 0 .. top, then a few values above the maxval `top`.
std::vector<std::uint32_t> ramp(std::uint32_t top, std::uint32_t limit) {
  std::vector<std::uint32_t> v;
  for (std::uint32_t i = 0; i <= top; ++i) v.push_back(i);
  for (std::uint32_t extra : {top + 1, limit}) {
    if (extra > top && extra <= limit) v.push_back(extra);
  }
  return v;
}

// A PNM header for `count` samples laid out as one row (times `per_pixel`).
std::string pnm_header(char kind, std::size_t count, int per_pixel,
                       std::uint32_t maxval) {
  const std::size_t width = count / per_pixel;
  return std::string("P") + kind + "\n# a comment\n" + std::to_string(width) + " 1\n" +
         std::to_string(maxval) + "\n";
}

std::vector<std::uint32_t> fit(std::vector<std::uint32_t> v, int per_pixel) {
  v.resize(v.size() / per_pixel * per_pixel);
  return v;
}

// A BGR (or BGRA, grey) image of `depth` with values across its range.
cv::Mat pattern(int type, int w, int h) {
  cv::Mat m(h, w, type);
  const bool wide = CV_MAT_DEPTH(type) == CV_16U;
  const int n = w * m.channels();
  for (int y = 0; y < h; ++y) {
    for (int i = 0; i < n; ++i) {
      const std::uint32_t v = (static_cast<std::uint32_t>(y * n + i) * 2654435761u) >> 7;
      if (wide) {
        m.ptr<std::uint16_t>(y)[i] = static_cast<std::uint16_t>(i % 7 == 0 ? v % 300 : v);
      } else {
        m.ptr<std::uint8_t>(y)[i] = static_cast<std::uint8_t>(v);
      }
    }
  }
  return m;
}

Bytes encode(const cv::Mat& image, const std::string& ext) {
  Bytes out;
  EXPECT_TRUE(cv::imencode(ext, image, out)) << ext;
  return out;
}

cv::Mat decode(const Bytes& bytes, int channels = 3) {
  const ImageHeader h = probe_image(bytes, kDefaultMaxPixels);
  return decode_image(bytes, h, 1, channels);
}

std::string decode_error(const Bytes& bytes) {
  try {
    decode(bytes);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// The files the PIL cross-check compares, by name.
std::vector<std::pair<std::string, Bytes>> pil_cases() {
  std::vector<std::pair<std::string, Bytes>> cases;
  auto add_pnm = [&](const std::string& name, char kind, int per_pixel,
                     std::uint32_t maxval, int bytes) {
    // Plain (text) samples above maxval are an error for PIL and here.
    const std::uint32_t limit = bytes == 0 ? maxval : maxval > 255 ? 65535 : 255;
    const auto samples = fit(ramp(maxval, limit), per_pixel);
    cases.emplace_back(
        name, pnm(pnm_header(kind, samples.size(), per_pixel, maxval), samples, bytes));
  };
  add_pnm("p5_255.pgm", '5', 1, 255, 1);
  add_pnm("p5_100.pgm", '5', 1, 100, 1);
  add_pnm("p5_1.pgm", '5', 1, 1, 1);
  add_pnm("p5_65535.pgm", '5', 1, 65535, 2);
  add_pnm("p5_1000.pgm", '5', 1, 1000, 2);
  add_pnm("p5_256.pgm", '5', 1, 256, 2);
  add_pnm("p6_255.ppm", '6', 3, 255, 1);
  add_pnm("p6_200.ppm", '6', 3, 200, 1);
  add_pnm("p6_65535.ppm", '6', 3, 65535, 2);
  add_pnm("p6_1000.ppm", '6', 3, 1000, 2);
  add_pnm("p2_100.pgm", '2', 1, 100, 0);
  add_pnm("p3_255.ppm", '3', 3, 255, 0);
  cases.emplace_back(
      "p4.pbm", Bytes{'P', '4', '\n', '1', '0', ' ', '2', '\n', 0xa5, 0xc0, 0x3c, 0x80});
  const std::string p1 = "P1\n5 2\n1 0 1 1 0\n00110\n";
  cases.emplace_back("p1.pbm", Bytes(p1.begin(), p1.end()));
  cases.emplace_back("grey8.tif", encode(pattern(CV_8UC1, 37, 5), ".tiff"));
  cases.emplace_back("bgr8.tif", encode(pattern(CV_8UC3, 37, 5), ".tiff"));
  cases.emplace_back("bgra8.tif", encode(pattern(CV_8UC4, 37, 5), ".tiff"));
  cases.emplace_back("grey16.tif", encode(pattern(CV_16UC1, 37, 5), ".tiff"));
  cases.emplace_back("bgr16.tif", encode(pattern(CV_16UC3, 37, 5), ".tiff"));
  return cases;
}

TEST(PnmTiffTest, EveryTorchvisionExtensionIsAnImageInAnyCase) {
  for (const char* ext :
       {"jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp"}) {
    std::string upper(ext);
    for (char& c : upper)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_TRUE(is_image_extension(std::string(".") + ext)) << ext;
    EXPECT_TRUE(is_image_extension("." + upper)) << upper;
  }
  EXPECT_FALSE(is_image_extension(".pbm"));  // not in torchvision's list
  EXPECT_FALSE(is_image_extension(".gif"));
}

// One file per extension, lower and upper case, each found and decoded; the
// lossless ones to exactly the pixels written.
TEST(PnmTiffTest, ImageFolderFindsAndDecodesEveryExtensionInBothCases) {
  TempDir dir;
  const cv::Mat bgr = pattern(CV_8UC3, 8, 8);
  cv::Mat grey;
  cv::cvtColor(bgr, grey, cv::COLOR_BGR2GRAY);
  struct File {
    const char* ext;
    bool lossless;
    bool is_grey;
  };
  const File files[] = {
      {"jpg", false, false}, {"jpeg", false, false}, {"png", true, false},
      {"ppm", true, false},  {"bmp", true, false},   {"pgm", true, true},
      {"tif", true, false},  {"tiff", true, false},  {"webp", false, false}};
  std::vector<std::string> names;
  for (const File& f : files) {
    const std::string lower = f.ext;
    std::string upper = lower;
    for (char& c : upper)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const std::string& ext : {lower, upper}) {
      const std::string name = "c/" + ext + "_" + (ext == lower ? "l" : "u") + "." + ext;
      write_file(dir / name, encode(f.is_grey ? grey : bgr, "." + lower));
      names.push_back(name);
    }
  }
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:8,u8"));
  ASSERT_EQ(data.size(), 18u);
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  for (std::uint64_t i = 0; i < data.size(); ++i) {
    const std::string path = data.path(i);
    const std::string ext = std::filesystem::path(path).extension().string().substr(1);
    std::string lower = ext;
    for (char& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const File& f = *std::find_if(std::begin(files), std::end(files),
                                  [&](const File& x) { return lower == x.ext; });
    SampleBuffer buffer(data.layout(), i);
    Rng rng = test_rng();
    ASSERT_NO_THROW(data.get(i, rng, buffer.writer())) << path;
    if (!f.lossless) continue;
    const auto image = buffer.field<std::uint8_t>(0);  // CHW
    for (int c = 0; c < 3; ++c) {
      for (int p = 0; p < 64; ++p) {
        const std::uint8_t want =
            f.is_grey ? grey.data[p] : rgb.data[3 * static_cast<std::size_t>(p) + c];
        ASSERT_EQ(image[c * 64 + p], want) << path << " channel " << c << " pixel " << p;
      }
    }
  }
}

// torchvision's default loader (torchvision.datasets.folder.pil_loader: PIL's
// open, then convert("RGB")) on the same files: equal bytes, every pixel.
TEST(PnmTiffTest, PixelsEqualTorchvisionsPilLoader) {
  SL_REQUIRE_PYTHON_MODULE("torchvision");
  TempDir dir;
  const auto cases = pil_cases();
  std::string names;
  for (const auto& [name, bytes] : cases) {
    write_file(dir / name, bytes);
    names += " " + name;
  }
  const std::string script =
      "import sys\n"
      "import numpy as np\n"
      "from torchvision.datasets.folder import pil_loader\n"
      "for name in sys.argv[2:]:\n"
      "    path = sys.argv[1] + '/' + name\n"
      "    np.asarray(pil_loader(path)).tofile(path + '.rgb')\n";
  const auto r = testing_util::run_python("pil_pixels.py", script, dir.path() + names);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const auto& [name, bytes] : cases) {
    const cv::Mat mine = decode(bytes);
    const Bytes pil = testing::read_file(dir / (name + ".rgb"));
    ASSERT_EQ(mine.type(), CV_8UC3) << name;
    ASSERT_EQ(pil.size(), mine.total() * 3) << name;
    for (std::size_t i = 0; i < pil.size(); ++i) {
      ASSERT_EQ(mine.data[i], pil[i])
          << name << " byte " << i << " (pixel " << i / 3 << ")";
    }
  }
}

TEST(PnmTiffTest, GreyOutputOfColourFilesAndColourOfGreyFiles) {
  const cv::Mat grey = decode(pnm("P5 2 1 255 ", {7, 250}, 1), 3);
  EXPECT_EQ(grey.at<cv::Vec3b>(0, 1), cv::Vec3b(250, 250, 250));
  const cv::Mat one = decode(pnm("P6 1 1 255 ", {255, 0, 0}, 1), 1);
  ASSERT_EQ(one.type(), CV_8UC1);
  EXPECT_EQ(one.at<std::uint8_t>(0, 0), 76);  // 0.299 * 255, as COLOR_RGB2GRAY rounds
}

TEST(PnmTiffTest, BrokenNetpbmIsADataErrorSayingWhy) {
  EXPECT_TRUE(contains(decode_error(pnm("P5\n4 2\n255\n", {1, 2, 3}, 1)),
                       "ends after 3 of 8 samples"));
  EXPECT_TRUE(contains(decode_error(pnm("P6\n2 1\n65535\n", {1, 2, 3, 4, 5}, 2)),
                       "ends after 5 of 6 samples"));
  EXPECT_TRUE(
      contains(decode_error(pnm("P2\n3 1\n9\n", {1, 2}, 0)), "ends after 2 of 3"));
  EXPECT_TRUE(contains(decode_error(pnm("P5\n1 1\n0\n", {0}, 1)), "maxval 0"));
  EXPECT_TRUE(contains(decode_error(pnm("P5\n1 1\n70000\n", {0}, 1)), "maxval 70000"));
  EXPECT_TRUE(contains(decode_error(pnm("P5\n0 1\n255\n", {}, 1)), "zero size"));
  EXPECT_TRUE(contains(decode_error(pnm("P5\nx 1\n255\n", {}, 1)), "not a number"));
  EXPECT_TRUE(
      contains(decode_error(pnm("P5\n99999999999 1\n255\n", {}, 1)), "out of range"));
  EXPECT_TRUE(contains(decode_error(pnm("P5\n4", {}, 1)), "no height"));
  EXPECT_TRUE(contains(decode_error(pnm("P1\n2 1\n1 7", {}, 0)), "is not 0 or 1"));
  EXPECT_TRUE(contains(decode_error(pnm("P2\n2 1\n100\n", {7, 101}, 0)), "101 above"));
  // A header claiming more pixels than the cap: refused before any allocation.
  const Bytes huge = pnm("P5\n100000 100000\n255\n", {}, 1);
  EXPECT_THROW(probe_image(huge, kDefaultMaxPixels), DataError);
}

TEST(PnmTiffTest, BrokenTiffIsADataErrorSayingWhy) {
  Bytes tiff = encode(pattern(CV_8UC3, 9, 4), ".tiff");
  EXPECT_EQ(decode_error(tiff), "");
  Bytes outside = tiff;
  outside[4] = outside[5] = outside[6] = 0x7f;  // the first directory's offset
  EXPECT_TRUE(contains(decode_error(outside), "lies outside the file"));
  EXPECT_TRUE(contains(decode_error(Bytes(tiff.begin(), tiff.begin() + 6)), "truncated"));
  Bytes cut(tiff.begin(), tiff.begin() + static_cast<std::ptrdiff_t>(tiff.size() / 2));
  EXPECT_NE(decode_error(cut), "");
}

// The entry of `tag` in the first directory of a little-endian TIFF.
std::size_t tiff_entry(const Bytes& tiff, std::uint32_t tag) {
  const std::size_t ifd = tiff[4] | tiff[5] << 8 | tiff[6] << 16 | tiff[7] << 24;
  const std::size_t entries = tiff[ifd] | tiff[ifd + 1] << 8;
  for (std::size_t i = 0; i < entries; ++i) {
    const std::size_t at = ifd + 2 + 12 * i;
    if ((tiff[at] | tiff[at + 1] << 8) == tag) return at;
  }
  ADD_FAILURE() << "no tag " << tag;
  return 0;
}

// OpenCV allocates a whole strip of RowsPerStrip rows, however short the image:
// a strip beyond the pixel cap is refused before OpenCV sees the file, and so is
// a directory giving a size twice (libtiff and the probe could read different
// ones).
TEST(PnmTiffTest, TiffStripsAndSizesTheProbeCannotTrustAreRefused) {
  const Bytes tiff = encode(pattern(CV_8UC3, 64, 4), ".tiff");
  ASSERT_EQ(tiff[0], 'I');
  Bytes tall = tiff;
  const std::size_t rows = tiff_entry(tall, 278);
  tall[rows + 2] = 4;  // LONG
  tall[rows + 8] = tall[rows + 9] = tall[rows + 10] = 0xff;
  tall[rows + 11] = 0x0f;  // 268435455 rows of 64 pixels
  EXPECT_TRUE(contains(decode_error(tall), "TIFF strips of 64x268435455"))
      << decode_error(tall);
  EXPECT_THROW(probe_image(tall, kDefaultMaxPixels), DataError);

  Bytes twice = tiff;
  const std::size_t length = tiff_entry(twice, 257);
  twice[length - 12] = 1;  // the ImageWidth entry before it becomes ImageLength
  twice[length - 11] = 1;
  EXPECT_TRUE(contains(decode_error(twice), "ImageLength appears twice"))
      << decode_error(twice);

  Bytes typed = tiff;
  typed[tiff_entry(typed, 256) + 2] = 1;  // BYTE
  EXPECT_TRUE(contains(decode_error(typed), "ImageWidth has type 1"))
      << decode_error(typed);
}

// A file whose content is not what its extension says is a DataError naming it.
TEST(PnmTiffTest, ImageFolderNamesTheFileThatFails) {
  TempDir dir;
  write_file(dir / "c/bad.pgm", pnm("P5\n4 4\n255\n", {1, 2}, 1));
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:4,u8"));
  const std::string error = testing::get_error(data, 0);
  EXPECT_TRUE(contains(error, "bad.pgm")) << error;
  EXPECT_TRUE(contains(error, "truncated PNM")) << error;
}

}  // namespace
}  // namespace seedloader
