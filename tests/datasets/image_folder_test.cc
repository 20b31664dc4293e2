#include "seedloader/datasets/image_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <opencv2/imgcodecs.hpp>

#include "seedloader/transforms/spec.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::get_error;
using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;

// A solid BGR colour that identifies (class, file).
cv::Scalar colour_of(int cls, int file) { return cv::Scalar(10 + file, 100 + cls, 200); }

// root/a_cat/{0,1,2}.png and root/b_dog/{0,1}.png, written in reverse order.
void write_folder(const TempDir& dir) {
  const char* classes[] = {"b_dog", "a_cat"};
  const int files[] = {2, 3};
  for (int c = 0; c < 2; ++c) {
    std::filesystem::create_directories(dir / classes[c]);
    for (int f = files[c] - 1; f >= 0; --f) {
      const int cls = 1 - c;  // sorted order: a_cat = 0, b_dog = 1
      cv::Mat image(8, 12, CV_8UC3, colour_of(cls, f));
      ASSERT_TRUE(cv::imwrite(
          dir / (std::string(classes[c]) + "/" + std::to_string(f) + ".png"), image));
    }
  }
  testing::write_file(dir / "a_cat/notes.txt", "ignored", 7);  // not an image extension
}

TEST(ImageFolderTest, ClassesAndFilesAreSortedAndPixelsArrive) {
  TempDir dir;
  write_folder(dir);
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:8,u8"));
  ASSERT_EQ(data.size(), 5u);
  EXPECT_EQ(data.classes(), (std::vector<std::string>{"a_cat", "b_dog"}));
  const int want_class[] = {0, 0, 0, 1, 1};
  const int want_file[] = {0, 1, 2, 0, 1};
  for (std::uint64_t i = 0; i < 5; ++i) {
    SampleBuffer buffer(data.layout(), i);
    Rng rng = test_rng();
    data.get(i, rng, buffer.writer());
    EXPECT_EQ(buffer.field<std::int64_t>(1)[0], want_class[i]);
    const cv::Scalar bgr = colour_of(want_class[i], want_file[i]);
    auto image = buffer.field<std::uint8_t>(0);
    ASSERT_EQ(image.size(), 3u * 8 * 8);
    for (int c = 0; c < 3; ++c) {  // CHW, RGB: channel 0 is OpenCV's last
      for (int p = 0; p < 64; ++p) ASSERT_EQ(image[c * 64 + p], bgr[2 - c]) << i;
    }
  }
}

TEST(ImageFolderTest, SameRngGivesTheSameAugmentedSampleAndTheLogRecordsDraws) {
  TempDir dir;
  std::filesystem::create_directories(dir / "x");
  cv::Mat image(120, 160, CV_8UC3);
  cv::randu(image, 0, 255);
  ASSERT_TRUE(cv::imwrite(dir / "x/a.jpg", image));
  ImageFolder data(dir.path(), parse_transform_spec("rrc:16,hflip,normalize:imagenet"));
  EXPECT_EQ(data.layout().field(0).shape, (std::vector<std::int64_t>{3, 16, 16}));
  SampleBuffer a(data.layout(), 0), b(data.layout(), 0);
  Rng ra = test_rng(5), rb = test_rng(5);
  TransformLog log;
  data.get_logged(0, ra, a.writer(), &log);
  data.get(0, rb, b.writer());
  auto fa = a.field<float>(0);
  auto fb = b.field<float>(0);
  EXPECT_TRUE(std::equal(fa.begin(), fa.end(), fb.begin()));
  EXPECT_NE(log.to_string().find("rrc.width="), std::string::npos);
  EXPECT_NE(log.to_string().find("hflip.flip="), std::string::npos);
}

TEST(ImageFolderTest, MissingRootIsADataErrorNamingIt) {
  TempDir dir;
  try {
    ImageFolder(dir / "nope", parse_transform_spec("centercrop:8"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "nope"), std::string::npos);
  }
}

// Nested folders, upper-case extensions and a linked folder, in torchvision's
// order: sorted(os.walk(class, followlinks=True)), files sorted in each.
void write_nested(const TempDir& dir) {
  const char* files[] = {"a/z.png",       "a/sub/b.PNG",  "a/sub/deeper/c.png",
                         "a/sub b/d.Jpg", "a/sub2/e.png", "b/x.png",
                         "b/y/q.bmp"};
  for (const char* f : files) {
    const std::filesystem::path p = dir / f;
    std::filesystem::create_directories(p.parent_path());
    cv::Mat image(4, 4, CV_8UC3, cv::Scalar(1, 2, 3));
    std::vector<std::uint8_t> bytes;
    const std::string ext = p.extension().string();
    ASSERT_TRUE(cv::imencode(ext == ".Jpg"   ? ".jpg"
                             : ext == ".PNG" ? ".png"
                                             : ext,
                             image, bytes));
    testing::write_file(p.string(), bytes);
  }
  testing::write_file(dir / "a/sub/readme.md", "x", 1);
  std::filesystem::create_directory_symlink(dir / "b/y", dir / "a/link");
}

std::vector<std::string> relative_paths(const ImageFolder& data, const TempDir& dir) {
  std::vector<std::string> out;
  for (std::uint64_t i = 0; i < data.size(); ++i) {
    out.push_back(data.path(i).substr(dir.path().size() + 1));
  }
  return out;
}

TEST(ImageFolderTest, WalksClassFoldersAtEveryDepthInTorchvisionsOrder) {
  TempDir dir;
  write_nested(dir);
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:4"));
  EXPECT_EQ(relative_paths(data, dir),
            (std::vector<std::string>{"a/z.png", "a/link/q.bmp", "a/sub/b.PNG",
                                      "a/sub b/d.Jpg", "a/sub/deeper/c.png",
                                      "a/sub2/e.png", "b/x.png", "b/y/q.bmp"}))
      << "'a' < 'a/link' < 'a/sub' < 'a/sub b' < 'a/sub/deeper' < 'a/sub2'";
}

TEST(ImageFolderTest, SamplesAndLabelsEqualTorchvisions) {
  SL_REQUIRE_PYTHON_MODULE("torchvision");
  TempDir dir;
  write_nested(dir);
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:4"));
  const auto r = testing_util::run_command(
      "/usr/bin/python3 -c 'import sys, torchvision\n"
      "for p, c in torchvision.datasets.ImageFolder(sys.argv[1]).samples: print(p, c)' " +
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string mine;
  for (std::uint64_t i = 0; i < data.size(); ++i) {
    SampleBuffer buffer(data.layout(), i);
    Rng rng = test_rng();
    data.get(i, rng, buffer.writer());
    mine += data.path(i) + " " + std::to_string(buffer.field<std::int64_t>(1)[0]) + "\n";
  }
  EXPECT_EQ(mine, r.out);
}

TEST(ImageFolderTest, ALinkBackUpTheTreeIsADataErrorNotAnEndlessWalk) {
  TempDir dir;
  write_folder(dir);
  std::filesystem::create_directory_symlink(dir / "a_cat", dir / "a_cat/again");
  try {
    ImageFolder(dir.path(), parse_transform_spec("centercrop:8"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("a_cat/again"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(ImageFolderTest, EmptyClassFolderIsADataErrorNamingIt) {
  TempDir dir;
  write_folder(dir);
  std::filesystem::create_directories(dir / "c_empty");
  try {
    ImageFolder(dir.path(), parse_transform_spec("centercrop:8"));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("c_empty"), std::string::npos);
  }
}

TEST(ImageFolderTest, ChainWithoutAFixedSizeIsAConfigError) {
  TempDir dir;
  write_folder(dir);
  EXPECT_THROW(ImageFolder(dir.path(), parse_transform_spec("hflip")), ConfigError);
}

// Replaces sample 1 (a_cat/1.png) with `bytes` and returns get(1)'s error.
std::string error_for_file(const std::vector<std::uint8_t>& bytes) {
  TempDir dir;
  write_folder(dir);
  testing::write_file(dir / "a_cat/1.png", bytes);
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:8"));
  const std::string what = get_error(data, 1);
  EXPECT_NE(what.find("sample 1"), std::string::npos) << what;
  EXPECT_NE(what.find(dir / "a_cat/1.png"), std::string::npos) << what;
  EXPECT_EQ(get_error(data, 0), "");  // the neighbours stay readable
  return what;
}

std::vector<std::uint8_t> encoded(const std::string& ext, int w = 64, int h = 64) {
  cv::Mat image(h, w, CV_8UC3);
  cv::randu(image, 0, 255);
  std::vector<std::uint8_t> out;
  cv::imencode(ext, image, out);
  return out;
}

TEST(ImageFolderTest, ZeroByteFileIsADataError) {
  EXPECT_NE(error_for_file({}).find("0 bytes"), std::string::npos);
}

TEST(ImageFolderTest, TruncatedJpegIsADataError) {
  auto bytes = encoded(".jpg");
  bytes.resize(bytes.size() * 2 / 3);
  EXPECT_NE(error_for_file(bytes).find("JPEG"), std::string::npos);
}

TEST(ImageFolderTest, PngWithBrokenCrcIsADataError) {
  auto bytes = encoded(".png");
  bytes[bytes.size() / 2] ^= 0x01;
  EXPECT_NE(error_for_file(bytes).find("CRC"), std::string::npos);
}

TEST(ImageFolderTest, FileThatIsNotAnImageIsADataError) {
  const std::string text = "GIF89a? no, plain text";
  EXPECT_NE(error_for_file({text.begin(), text.end()}).find("not an image"),
            std::string::npos);
}

TEST(ImageFolderTest, HugeHeaderIsADataErrorBeforeDecoding) {
  auto bytes = encoded(".png", 8, 8);
  for (int i : {16, 20}) bytes[i + 2] = bytes[i + 3] = 0xff;  // 65535 x 65535
  EXPECT_NE(error_for_file(bytes).find("above the cap"), std::string::npos);
}

TEST(ImageFolderTest, PixelCapIsAnOption) {
  TempDir dir;
  write_folder(dir);
  ImageFolderOptions options;
  options.max_pixels = 8 * 12 - 1;
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:8"), options);
  EXPECT_NE(get_error(data, 0).find("above the cap"), std::string::npos);
}

TEST(ImageFolderTest, UnreadableFileIsADataError) {
  TempDir dir;
  write_folder(dir);
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:8"));
  const std::string path = dir / "b_dog/0.png";
  // Without read permission (which root ignores), and then gone altogether.
  ::chmod(path.c_str(), 0);
  std::string what = get_error(data, 3);
  if (what.empty()) {
    std::filesystem::remove(path);
    what = get_error(data, 3);
  }
  EXPECT_NE(what.find("sample 3"), std::string::npos) << what;
  EXPECT_NE(what.find("cannot open"), std::string::npos) << what;
}

TEST(ImageFolderTest, FifoSocketAndDeviceNamedLikeImagesAreDataErrorsNotWaits) {
  TempDir dir;
  std::filesystem::create_directories(dir / "c");
  ASSERT_TRUE(cv::imwrite(dir / "c/a.png", cv::Mat(8, 8, CV_8UC3, colour_of(0, 0))));
  testing::make_fifo(dir / "c/x.jpg");
  const int socket_fd = testing::make_socket(dir / "c/y.jpg");
  std::filesystem::create_symlink("/dev/zero", dir / "c/z.jpg");
  ImageFolder data(dir.path(), parse_transform_spec("centercrop:8,u8"));
  ASSERT_EQ(data.size(), 4u);  // a.png, x.jpg, y.jpg, z.jpg
  EXPECT_EQ(get_error(data, 0), "");
  const std::string fifo = testing::data_error_without_waiting(
      dir / "c/x.jpg", [&] { throw DataError(get_error(data, 1)); });
  EXPECT_TRUE(testing::contains(fifo, "x.jpg")) << fifo;
  EXPECT_TRUE(testing::contains(fifo, "FIFO")) << fifo;
  const std::string socket = get_error(data, 2);
  EXPECT_TRUE(testing::contains(socket, "y.jpg")) << socket;
  EXPECT_TRUE(testing::contains(socket, "socket")) << socket;
  const std::string device = get_error(data, 3);
  EXPECT_TRUE(testing::contains(device, "z.jpg")) << device;
  EXPECT_TRUE(testing::contains(device, "device")) << device;
  ::close(socket_fd);
}

}  // namespace
}  // namespace seedloader
