// seedloader-pack end to end: packs data sets the test writes (an ImageFolder of
// JPEGs and PNGs, CIFAR-10 and MNIST files), then checks the folder against its
// index.json, the members against the sources' bytes, and what TarShards reads
// back against the source data set.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "loader/datasets/jpeg_restart.h"
#include "seedloader/datasets/cifar10.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/sampler.h"
#include "seedloader/transforms/spec.h"
#include "tests/common/run_command.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::read_file;
using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;
using testing::write_file;
using testing_util::CommandResult;
using testing_util::run_command;

CommandResult pack(const std::string& args) {
  return run_command(std::string(SEEDLOADER_PACK) + " " + args + " 2>&1");
}

// 12 images in three classes: noise, so JPEGs and PNGs are a few KB each; one
// file has an upper-case extension, one class a nested folder.
void write_image_folder(const std::string& root) {
  cv::RNG noise(5);
  const std::vector<std::string> names = {"ant/a0.jpg",  "ant/a1.png", "ant/deep/a2.JPG",
                                          "ant/a3.jpeg", "bee/b0.png", "bee/b1.jpg",
                                          "bee/b2.png",  "cat/c0.jpg", "cat/c1.jpg",
                                          "cat/c2.png",  "cat/c3.png", "cat/c4.jpg"};
  for (const std::string& name : names) {
    cv::Mat image(24 + static_cast<int>(name.size()), 40, CV_8UC3);
    noise.fill(image, cv::RNG::UNIFORM, 0, 256);
    const fs::path path = fs::path(root) / name;
    fs::create_directories(path.parent_path());
    std::string ext = path.extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(c));
    std::vector<std::uint8_t> bytes;
    ASSERT_TRUE(cv::imencode(ext, image, bytes));
    write_file(path.string(), bytes);
  }
}

nlohmann::json read_index(const std::string& out) {
  const std::vector<std::uint8_t> text = read_file(out + "/index.json");
  return nlohmann::json::parse(text.begin(), text.end());
}

std::string xxh64_hex(const std::vector<std::uint8_t>& bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH64(bytes.data(), bytes.size(), 0)));
  return hex;
}

struct TarMember {
  std::string name;
  std::vector<std::uint8_t> bytes;
};

// The members of a plain ustar file, read here without libarchive so the test
// does not share a reader with the code under test.
std::vector<TarMember> tar_members(const std::vector<std::uint8_t>& tar) {
  std::vector<TarMember> members;
  std::size_t at = 0;
  while (at + 512 <= tar.size() && tar[at] != 0) {
    const char* h = reinterpret_cast<const char*>(tar.data() + at);
    EXPECT_EQ(std::string(h + 257, 5), "ustar");
    EXPECT_EQ(h[156], '0');
    const std::string name(h, strnlen(h, 100));
    const std::size_t size = std::stoull(std::string(h + 124, 11), nullptr, 8);
    members.push_back({name, {tar.begin() + at + 512, tar.begin() + at + 512 + size}});
    at += 512 + (size + 511) / 512 * 512;
  }
  EXPECT_EQ(at + 1024, tar.size()) << "two zero blocks end the archive";
  return members;
}

// Every member of every shard listed in index.json, in order.
std::vector<TarMember> packed_members(const std::string& out) {
  std::vector<TarMember> all;
  const nlohmann::json index = read_index(out);
  for (const nlohmann::json& shard : index["shards"]) {
    for (TarMember& m :
         tar_members(read_file(out + "/" + shard["name"].get<std::string>())))
      all.push_back(std::move(m));
  }
  return all;
}

// The source indices in the order the pack holds them (from the image members'
// keys), checking every sample is an image member followed by its .cls.
std::vector<std::uint64_t> packed_order(const std::string& out) {
  const std::vector<TarMember> members = packed_members(out);
  std::vector<std::uint64_t> order;
  EXPECT_EQ(members.size() % 2, 0u);
  for (std::size_t i = 0; i + 1 < members.size(); i += 2) {
    const std::string key = members[i].name.substr(0, members[i].name.find('.'));
    EXPECT_EQ(members[i + 1].name, key + ".cls");
    EXPECT_EQ(key.size(), 9u) << members[i].name;
    order.push_back(std::stoull(key));
  }
  return order;
}

// Compares get() of every sample of `a` and `b`: the u8 images byte for byte, and
// the labels.
void expect_same_samples(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.layout().bytes_per_sample(), b.layout().bytes_per_sample());
  for (std::uint64_t i = 0; i < a.size(); ++i) {
    SampleBuffer x(a.layout(), i), y(b.layout(), i);
    Rng rx = test_rng(3), ry = test_rng(3);
    a.get(i, rx, x.writer());
    b.get(i, ry, y.writer());
    const auto ix = x.field<std::uint8_t>(0), iy = y.field<std::uint8_t>(0);
    ASSERT_TRUE(std::equal(ix.begin(), ix.end(), iy.begin(), iy.end())) << "sample " << i;
    EXPECT_EQ(x.field<std::int64_t>(1)[0], y.field<std::int64_t>(1)[0]) << "sample " << i;
  }
}

constexpr int kShardLimit = 8192;

// Each test has a scratch folder with the ImageFolder of write_image_folder()
// in src/.
class SeedloaderPackTest : public ::testing::Test {
 protected:
  void SetUp() override { write_image_folder(dir / "src"); }
  // Packs src/ into `out` (below the scratch folder) with `flags`.
  CommandResult pack_folder(const std::string& out, const std::string& flags = "") {
    return pack("imagefolder:" + (dir / "src") + " " + (dir / out) + " " + flags);
  }

  TempDir dir;
};

TEST_F(SeedloaderPackTest, IndexJsonDescribesEveryShardItLists) {
  const CommandResult r = pack_folder("out", "--shard-size 8K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "12 samples in ")) << r.out;
  const nlohmann::json index = read_index(dir / "out");
  EXPECT_EQ(index["format"], "seedloader.shards");
  EXPECT_EQ(index["format_version"], 1);
  EXPECT_EQ(index["samples"], 12);
  EXPECT_EQ(index["fields"], nlohmann::json({"cls", "jpeg", "jpg", "png"}));
  ASSERT_GE(index["shards"].size(), 3u);
  std::uint64_t samples = 0;
  std::set<std::string> on_disk;
  for (const fs::directory_entry& e : fs::directory_iterator(dir / "out"))
    on_disk.insert(e.path().filename().string());
  std::set<std::string> listed = {"index.json"};
  for (std::size_t s = 0; s < index["shards"].size(); ++s) {
    const nlohmann::json& shard = index["shards"][s];
    char name[16];
    std::snprintf(name, sizeof name, "%06zu.tar", s);
    EXPECT_EQ(shard["name"], name);
    listed.insert(name);
    const std::vector<std::uint8_t> bytes = read_file(dir / ("out/" + std::string(name)));
    EXPECT_EQ(shard["bytes"], bytes.size()) << name;
    EXPECT_LE(bytes.size(), static_cast<std::size_t>(kShardLimit)) << name;
    EXPECT_EQ(shard["xxh64"], xxh64_hex(bytes)) << name;
    EXPECT_EQ(shard["samples"], tar_members(bytes).size() / 2) << name;
    samples += shard["samples"].get<std::uint64_t>();
  }
  EXPECT_EQ(samples, 12u);
  EXPECT_EQ(on_disk, listed) << "no temporaries or other files are left";
}

TEST_F(SeedloaderPackTest, MembersAreTheOriginalFilesAndTheirLabels) {
  const CommandResult r = pack_folder("out", "--shard-size 8K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const ImageFolder folder(dir / "src", parse_transform_spec("centercrop:8"));
  const std::vector<TarMember> members = packed_members(dir / "out");
  ASSERT_EQ(members.size(), 2 * folder.size());
  for (std::uint64_t i = 0; i < folder.size(); ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "%09llu", static_cast<unsigned long long>(i));
    std::string ext = fs::path(folder.path(i)).extension().string();
    for (char& c : ext) c = static_cast<char>(std::tolower(c));
    EXPECT_EQ(members[2 * i].name, key + ext);
    EXPECT_EQ(members[2 * i].bytes, read_file(folder.path(i))) << folder.path(i);
    EXPECT_EQ(members[2 * i + 1].name, std::string(key) + ".cls");
    const std::string label(members[2 * i + 1].bytes.begin(),
                            members[2 * i + 1].bytes.end());
    EXPECT_EQ(label, std::to_string(folder.label(i))) << folder.path(i);
  }
  EXPECT_EQ(folder.label(11), 2);  // c4.jpg: cat, the third class
}

TEST_F(SeedloaderPackTest, TarShardsReadsThePackAsTheImageFolderReadsTheSource) {
  const CommandResult r = pack_folder("out", "--shard-size 8K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const ImageFolder folder(dir / "src", parse_transform_spec("centercrop:20,u8"));
  const TarShards shards(dir / "out/*.tar", parse_transform_spec("centercrop:20,u8"));
  expect_same_samples(folder, shards);
  // The folder itself: sized from its index.json, each shard checked against it.
  const TarShards indexed(dir / "out", parse_transform_spec("centercrop:20,u8"));
  expect_same_samples(folder, indexed);
}

TEST_F(SeedloaderPackTest, ShuffleSeedWritesTheSeededPermutationAndRepeatsIt) {
  ASSERT_EQ(pack_folder("plain").exit_code, 0);
  ASSERT_EQ(pack_folder("a", "--shuffle-seed 7 --shard-size 8K").exit_code, 0);
  ASSERT_EQ(pack_folder("b", "--shuffle-seed 7 --shard-size 8K").exit_code, 0);
  ASSERT_EQ(pack_folder("c", "--shuffle-seed 8 --shard-size 8K").exit_code, 0);
  std::vector<std::uint64_t> identity(12);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(packed_order(dir / "plain"), identity);
  const std::vector<std::uint64_t> seven = packed_order(dir / "a");
  EXPECT_EQ(seven, epoch_permutation(12, 7, 0));
  EXPECT_NE(seven, identity);
  EXPECT_NE(packed_order(dir / "c"), seven);
  // The same seed gives the same files, byte for byte.
  EXPECT_EQ(read_index(dir / "a"), read_index(dir / "b"));
}

TEST_F(SeedloaderPackTest, ASampleLargerThanTheLimitGoesAloneInItsShard) {
  const CommandResult r = pack_folder("out", "--shard-size 1K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json index = read_index(dir / "out");
  ASSERT_EQ(index["shards"].size(), 12u);
  for (const nlohmann::json& shard : index["shards"]) {
    EXPECT_EQ(shard["samples"], 1);
    EXPECT_GT(shard["bytes"], 1024);
  }
}

// CIFAR-10's binary layout: record r has label r % 10 and pixels p + 7r + 50c.
void write_cifar(const std::string& dir) {
  for (int b = 1; b <= 5; ++b) {
    std::vector<std::uint8_t> bytes;
    for (int r = 3 * (b - 1); r < 3 * b; ++r) {
      bytes.push_back(static_cast<std::uint8_t>(r % 10));
      for (int c = 0; c < 3; ++c) {
        for (int p = 0; p < 1024; ++p)
          bytes.push_back(static_cast<std::uint8_t>(p + 7 * r + 50 * c));
      }
    }
    write_file(dir + "/data_batch_" + std::to_string(b) + ".bin", bytes);
  }
}

TEST_F(SeedloaderPackTest, Cifar10PixelsSurviveAsPng) {
  write_cifar(dir / "cifar");
  const CommandResult r = pack("cifar10:" + (dir / "cifar") + " " + (dir / "out"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_index(dir / "out")["fields"], nlohmann::json({"cls", "png"}));
  const Cifar10 cifar(dir / "cifar", Split::kTrain, parse_transform_spec("u8"));
  const TarShards shards(dir / "out/*.tar", parse_transform_spec("centercrop:32,u8"));
  expect_same_samples(cifar, shards);
}

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<std::uint8_t>(v >> shift));
}

// MNIST's IDX files: 5 images of 28x28, pixel p of image i = 3p + 11i, label i.
void write_mnist(const std::string& dir) {
  std::vector<std::uint8_t> images, labels;
  put_be32(images, 0x803);
  put_be32(images, 5);
  put_be32(images, 28);
  put_be32(images, 28);
  put_be32(labels, 0x801);
  put_be32(labels, 5);
  for (int i = 0; i < 5; ++i) {
    for (int p = 0; p < 28 * 28; ++p)
      images.push_back(static_cast<std::uint8_t>(3 * p + 11 * i));
    labels.push_back(static_cast<std::uint8_t>(i));
  }
  write_file(dir + "/train-images-idx3-ubyte", images);
  write_file(dir + "/train-labels-idx1-ubyte", labels);
}

TEST_F(SeedloaderPackTest, MnistPixelsSurviveAsGreyPng) {
  write_mnist(dir / "mnist");
  const CommandResult r = pack("mnist:" + (dir / "mnist") + " " + (dir / "out"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Mnist mnist(dir / "mnist", Split::kTrain, parse_transform_spec("u8"));
  TarShardsOptions grey;
  grey.channels = 1;
  const TarShards shards(dir / "out/*.tar", parse_transform_spec("centercrop:28,u8"),
                         grey);
  expect_same_samples(mnist, shards);
}

TEST_F(SeedloaderPackTest, TarInputIsCopiedMemberForMember) {
  ASSERT_EQ(pack_folder("one", "--shuffle-seed 3 --shard-size 8K").exit_code, 0);
  const CommandResult r =
      pack("tar:" + (dir / "one") + "/*.tar " + (dir / "two") + " --shard-size 16K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<TarMember> one = packed_members(dir / "one"),
                               two = packed_members(dir / "two");
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    // Keys are renumbered by position in the source; extensions and bytes stay.
    EXPECT_EQ(fs::path(one[i].name).extension(), fs::path(two[i].name).extension());
    EXPECT_EQ(one[i].bytes, two[i].bytes) << one[i].name;
  }
}

TEST_F(SeedloaderPackTest, APackedFolderOrItsIndexIsRepackedFromTheShardsItLists) {
  ASSERT_EQ(pack_folder("one", "--shuffle-seed 3 --shard-size 8K").exit_code, 0);
  // A stray tar beside the pack is not one of its shards.
  fs::copy_file(dir / "one/000000.tar", dir / "one/000000-old.tar");
  const std::vector<TarMember> one = packed_members(dir / "one");
  for (const std::string& source : {dir / "one", dir / "one/index.json"}) {
    const std::string out = dir / ("two" + std::to_string(source.size()));
    const CommandResult r = pack("tar:" + source + " " + out + " --shard-size 16K");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const std::vector<TarMember> two = packed_members(out);
    ASSERT_EQ(one.size(), two.size());
    for (std::size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].bytes, two[i].bytes);
  }
  const CommandResult url = pack("tar:http://127.0.0.1:1/one/ " + (dir / "three"));
  EXPECT_EQ(url.exit_code, 2) << url.out;
  EXPECT_TRUE(contains(url.out, "reads local shards only")) << url.out;
}

TEST_F(SeedloaderPackTest, UsageAndInputErrorsExitTwoWithAMessage) {
  const std::string src = "imagefolder:" + (dir / "src") + " ";
  CommandResult r = pack("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "SPEC is required")) << r.out;
  r = pack(src);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "OUT is required")) << r.out;
  r = pack("nonsense " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "expected KIND:ARG")) << r.out;
  r = pack("imagefolder:" + (dir / "missing") + " " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, dir / "missing")) << r.out;
  r = pack(src + (dir / "out") + " --shard-size 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "--shard-size must be at least 1 byte")) << r.out;
  r = pack(src + (dir / "out") + " --shard-size 12Q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "--shard-size '12Q'")) << r.out;
  r = pack(src + (dir / "out") + " --shuffle-seed -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir / "out")) << "nothing is written before the checks";

  ASSERT_EQ(pack(src + (dir / "out")).exit_code, 0);
  r = pack(src + (dir / "out"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "already holds 000000.tar; pass --force")) << r.out;
  EXPECT_EQ(pack(src + (dir / "out") + " --force --shard-size 8K").exit_code, 0);
  EXPECT_GE(read_index(dir / "out")["shards"].size(), 3u);
}

TEST_F(SeedloaderPackTest, ForceLeavesFilesItDidNotWrite) {
  const std::string src = "imagefolder:" + (dir / "src") + " ";
  ASSERT_EQ(pack(src + (dir / "out") + " --shard-size 8K").exit_code, 0);
  write_file(dir / "out/notes.txt", std::vector<std::uint8_t>{'h', 'i'});
  ASSERT_EQ(pack(src + (dir / "out") + " --force").exit_code, 0);
  EXPECT_TRUE(fs::exists(dir / "out/notes.txt"));
  EXPECT_FALSE(fs::exists(dir / "out/000001.tar")) << "shards of the earlier pack go";
  write_file(dir / "out/theirs.tar", std::vector<std::uint8_t>(1024, 0));
  const CommandResult r = pack(src + (dir / "out") + " --force");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.out, "holds theirs.tar")) << r.out;
  EXPECT_TRUE(fs::exists(dir / "out/theirs.tar"));
}

TEST_F(SeedloaderPackTest, JpegRestartRewritesBaselineJpegsAndTheyReadTheSame) {
  // The folder, plus a larger photo-like JPEG (several MCU rows above and below
  // any crop) and a progressive one.
  fs::copy(dir / "src", dir / "src2", fs::copy_options::recursive);
  cv::Mat photo(200, 300, CV_8UC3);
  cv::RNG(9).fill(photo, cv::RNG::UNIFORM, 0, 256);
  cv::blur(photo, photo, {5, 5});
  std::vector<std::uint8_t> bytes;
  ASSERT_TRUE(cv::imencode(".jpg", photo, bytes));
  fs::create_directories(dir / "src2/dog");
  write_file(dir / "src2/dog/d0.jpg", bytes);
  ASSERT_TRUE(cv::imencode(".jpg", photo, bytes, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  write_file(dir / "src2/dog/d1.jpg", bytes);
  const CommandResult r = pack("imagefolder:" + (dir / "src2") + " " + (dir / "rst") +
                               " --jpeg-restart --shard-size 8K");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "--jpeg-restart: 8 JPEGs given restart markers")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 images kept as they were (progressive)")) << r.out;
  EXPECT_TRUE(contains(r.out, "5 images kept as they were (not a JPEG)")) << r.out;
  EXPECT_EQ(read_index(dir / "rst")["fields"],
            nlohmann::json({"cls", "jpeg", "jpg", "png", "rst"}));
  // Each rewritten JPEG is followed by its index, which is where its markers are.
  const std::vector<TarMember> members = packed_members(dir / "rst");
  std::size_t indexed = 0;
  for (std::size_t i = 0; i + 1 < members.size(); ++i) {
    if (fs::path(members[i + 1].name).extension() != ".rst") continue;
    ++indexed;
    const RestartIndex x = decode_restart_index(members[i + 1].bytes);
    const RestartIndex found = index_restarts(members[i].bytes);
    EXPECT_EQ(x.markers, found.markers) << members[i].name;
    EXPECT_EQ(x.scan_end, found.scan_end) << members[i].name;
  }
  EXPECT_EQ(indexed, 8u);
  // Random crops read from the rows around them equal the source's, byte for byte.
  const ImageFolder folder(dir / "src2", parse_transform_spec("rrc:16,u8"));
  const TarShards shards(dir / "rst", parse_transform_spec("rrc:16,u8"));
  expect_same_samples(folder, shards);
  // A damaged index names the shard, the member and the sample.
  fs::copy(dir / "rst", dir / "bad", fs::copy_options::recursive);
  const nlohmann::json index = read_index(dir / "bad");
  for (const nlohmann::json& shard : index["shards"]) {
    const std::string path = dir / ("bad/" + shard["name"].get<std::string>());
    std::vector<std::uint8_t> tar = read_file(path);
    const std::vector<TarMember> in_shard = tar_members(tar);
    // The first .rst member's first marker offset: its data starts 512 bytes
    // after its header, which follows the image's data.
    std::size_t at = 0;
    for (const TarMember& m : in_shard) {
      at += 512;
      if (fs::path(m.name).extension() == ".rst") {
        tar[at + 24] ^= 0x01;  // marker 0's offset, off by one
        break;
      }
      at += (m.bytes.size() + 511) / 512 * 512;
    }
    write_file(path, tar);
  }
  const TarShards bad(dir / "bad/*.tar", parse_transform_spec("rrc:16,u8"));
  std::string error;
  for (std::uint64_t i = 0; i < bad.size() && error.empty(); ++i) {
    SampleBuffer x(bad.layout(), i);
    Rng rng = test_rng(3);
    try {
      bad.get(i, rng, x.writer());
    } catch (const DataError& e) {
      error = e.what();
    }
  }
  EXPECT_TRUE(contains(error, "restart")) << error;
  EXPECT_TRUE(contains(error, "shard ")) << error;
  EXPECT_TRUE(contains(error, "member '")) << error;
  EXPECT_TRUE(contains(error, ": sample ")) << error;
}

}  // namespace
}  // namespace seedloader
