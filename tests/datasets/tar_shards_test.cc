#include "seedloader/datasets/tar_shards.h"
#include "loader/datasets/shard_source.h"

#include <gtest/gtest.h>

#include <clocale>
#include <cstdio>
#include <filesystem>

#include <opencv2/imgcodecs.hpp>

#include "seedloader/transforms/spec.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/datasets/dataset_test_util.h"
#include "tests/datasets/tar_writer.h"

namespace seedloader {
namespace {

using testing::Member;
using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;
using testing::write_tar;

cv::Scalar colour_of(int sample) { return cv::Scalar(sample, 2 * sample, 250 - sample); }

std::vector<std::uint8_t> png_of(int sample) {
  std::vector<std::uint8_t> out;
  cv::imencode(".png", cv::Mat(6, 6, CV_8UC3, colour_of(sample)), out);
  return out;
}

std::vector<std::uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

// Sample k: key, a .png of colour_of(k) and a .cls of 100 + k, plus a .json ignored.
std::vector<Member> sample_members(int k, const std::string& key) {
  return {{Member::kFile, key + ".cls", text(std::to_string(100 + k) + "\n"), ""},
          {Member::kFile, key + ".png", png_of(k), ""},
          {Member::kFile, key + ".json", text("{}"), ""}};
}

void write_two_shards(const TempDir& dir) {
  std::vector<Member> a, b;
  for (int k = 0; k < 3; ++k) {
    for (auto& m : sample_members(k, "s/" + std::to_string(k))) a.push_back(m);
  }
  const std::string long_key = "deep/" + std::string(150, 'n') + "/k3";  // pax header
  for (auto& m : sample_members(3, long_key)) b.push_back(m);
  for (auto& m : sample_members(4, "k4")) b.push_back(m);
  write_tar(dir / "shard-000000.tar", a);
  write_tar(dir / "shard-000001.tar", b);
}

TEST(TarShardsTest, SamplesAcrossShardsAreRandomlyAccessible) {
  TempDir dir;
  write_two_shards(dir);
  TarShards data(dir / "shard-{000000..000001}.tar",
                 parse_transform_spec("centercrop:6,u8"));
  ASSERT_EQ(data.size(), 5u);
  EXPECT_EQ(data.key(4), "k4");
  for (int i = 4; i >= 0; --i) {
    SampleBuffer buffer(data.layout(), i);
    Rng rng = test_rng();
    data.get(i, rng, buffer.writer());
    EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 100 + i);
    auto image = buffer.field<std::uint8_t>(0);
    for (int c = 0; c < 3; ++c) ASSERT_EQ(image[c * 36 + 7], colour_of(i)[2 - c]) << i;
  }
}

TEST(TarShardsTest, HoldsNoDescriptorPerShard) {
  // Thousands of shards must not cost thousands of open files in every worker:
  // the data set keeps the few it read last open, whatever their number.
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                         std::filesystem::directory_iterator());
  };
  TempDir dir;
  for (int s = 0; s < 40; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "many-%06d.tar", s);
    write_tar(dir / name, sample_members(s, "k" + std::to_string(s)));
  }
  const auto before = open_fds();
  TarShards data(dir / "many-{000000..000039}.tar",
                 parse_transform_spec("centercrop:6,u8"));
  ASSERT_EQ(data.size(), 40u);
  SampleBuffer buffer(data.layout(), 39);
  Rng rng = test_rng();
  for (std::uint64_t i = 0; i < data.size(); ++i) {
    data.get(i, rng, buffer.writer());
    EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 100 + static_cast<std::int64_t>(i));
    EXPECT_LE(open_fds(), before + static_cast<long>(LocalShards::kKept)) << i;
  }
  EXPECT_EQ(open_fds(), before + static_cast<long>(LocalShards::kKept));
}

TEST(TarShardsTest, GnuLongNameMembersKeepTheirDataOffsets) {
  TempDir dir;
  std::vector<Member> members;
  const std::string long_key = std::string(120, 'g') + "/x";
  for (auto& m : sample_members(7, long_key)) members.push_back(m);
  for (auto& m : sample_members(8, "short")) members.push_back(m);
  write_tar(dir / "gnu.tar", members, /*gnu=*/true);
  TarShards data(dir / "gnu.tar", parse_transform_spec("centercrop:6,u8"));
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(data.key(0), long_key);
  for (int i = 0; i < 2; ++i) {
    SampleBuffer buffer(data.layout(), i);
    Rng rng = test_rng();
    data.get(i, rng, buffer.writer());
    EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 107 + i);
    EXPECT_EQ(buffer.field<std::uint8_t>(0)[0], colour_of(7 + i)[2]);
  }
}

TEST(TarShardsTest, GlobPatternsFindTheShardsInOrder) {
  TempDir dir;
  write_two_shards(dir);
  EXPECT_EQ(
      expand_shard_pattern(dir / "shard-*.tar"),
      (std::vector<std::string>{dir / "shard-000000.tar", dir / "shard-000001.tar"}));
  EXPECT_THROW(expand_shard_pattern(dir / "none-*.tar"), DataError);
  EXPECT_THROW(expand_shard_pattern(dir / "shard-{1..}.tar"), ConfigError);
  TarShards data(dir / "shard-*.tar", parse_transform_spec("centercrop:6"));
  EXPECT_EQ(data.size(), 5u);
}

std::string index_error(const std::vector<Member>& members) {
  TempDir dir;
  write_tar(dir / "bad.tar", members);
  try {
    TarShards(dir / "bad.tar", parse_transform_spec("centercrop:6"));
  } catch (const DataError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir / "bad.tar"), std::string::npos) << what;
    return what;
  }
  return "";
}

TEST(TarShardsTest, DotDotMemberIsRejected) {
  auto members = sample_members(0, "a");
  members.push_back({Member::kFile, "../x", text("1"), ""});
  EXPECT_NE(index_error(members).find("'../x'"), std::string::npos);
  EXPECT_NE(index_error({{Member::kFile, "a/../../b.cls", text("1"), ""}}).find("'..'"),
            std::string::npos);
}

TEST(TarShardsTest, AbsoluteMemberIsRejected) {
  EXPECT_NE(index_error({{Member::kFile, "/etc/passwd", text("root:x:0:0"), ""}})
                .find("'/etc/passwd'"),
            std::string::npos);
}

TEST(TarShardsTest, SymlinkAndHardlinkMembersAreRejected) {
  auto members = sample_members(0, "a");
  members.push_back({Member::kSymlink, "b.png", {}, "/etc/passwd"});
  EXPECT_NE(index_error(members).find("links"), std::string::npos);
  members = sample_members(0, "a");
  members.push_back({Member::kHardlink, "b.png", {}, "a.png"});
  EXPECT_NE(index_error(members).find("links"), std::string::npos);
}

TEST(TarShardsTest, SampleWithoutLabelOrSplitAcrossTheShardIsRejected) {
  EXPECT_NE(index_error({{Member::kFile, "a.png", png_of(0), ""}}).find("no .cls label"),
            std::string::npos);
  std::vector<Member> split = {{Member::kFile, "a.png", png_of(0), ""},
                               {Member::kFile, "b.png", png_of(1), ""},
                               {Member::kFile, "b.cls", text("1"), ""},
                               {Member::kFile, "a.cls", text("0"), ""}};
  EXPECT_NE(index_error(split).find("no .cls label"), std::string::npos);
}

TEST(TarShardsTest, CorruptMemberIsADataErrorNamingShardMemberAndSample) {
  TempDir dir;
  std::vector<Member> members = sample_members(0, "good");
  members.push_back({Member::kFile, "bad.cls", text("7"), ""});
  members.push_back({Member::kFile, "bad.png", text("not a png at all"), ""});
  members.push_back({Member::kFile, "nolabel.cls", text("seven"), ""});
  members.push_back({Member::kFile, "nolabel.png", png_of(2), ""});
  write_tar(dir / "s.tar", members);
  TarShards data(dir / "s.tar", parse_transform_spec("centercrop:6"));
  EXPECT_EQ(testing::get_error(data, 0), "");
  const std::string what = testing::get_error(data, 1);
  EXPECT_NE(what.find("sample 1"), std::string::npos) << what;
  EXPECT_NE(what.find(dir / "s.tar"), std::string::npos) << what;
  EXPECT_NE(what.find("'bad'"), std::string::npos) << what;
  EXPECT_NE(testing::get_error(data, 2).find("not a decimal integer"), std::string::npos);
}

TEST(TarShardsTest, MissingShardIsADataError) {
  TempDir dir;
  write_two_shards(dir);
  EXPECT_THROW(
      TarShards(dir / "shard-{000000..000002}.tar", parse_transform_spec("centercrop:6")),
      DataError);
}

TEST(TarShardsTest, FifoOrDeviceShardIsADataErrorNotAWait) {
  TempDir dir;
  testing::make_fifo(dir / "fifo.tar");
  const std::string fifo = testing::data_error_without_waiting(dir / "fifo.tar", [&] {
    TarShards(dir / "fifo.tar", parse_transform_spec("centercrop:6"));
  });
  EXPECT_TRUE(testing::contains(fifo, dir / "fifo.tar")) << fifo;
  EXPECT_TRUE(testing::contains(fifo, "FIFO")) << fifo;
  std::filesystem::create_symlink("/dev/zero", dir / "zero.tar");
  try {
    TarShards(dir / "zero.tar", parse_transform_spec("centercrop:6"));
    ADD_FAILURE() << "a device read as a shard";
  } catch (const DataError& e) {
    EXPECT_TRUE(testing::contains(e.what(), dir / "zero.tar")) << e.what();
    EXPECT_TRUE(testing::contains(e.what(), "device")) << e.what();
  }
}

// Reads sample 0 of `shard` and checks its key, label and colour.
void expect_sample(const std::string& shard, const std::string& key, int k) {
  TarShards data(shard, parse_transform_spec("centercrop:6,u8"));
  ASSERT_EQ(data.size(), 1u);
  EXPECT_EQ(data.key(0), key);
  SampleBuffer buffer(data.layout(), 0);
  Rng rng = test_rng();
  data.get(0, rng, buffer.writer());
  EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 100 + k);
  EXPECT_EQ(buffer.field<std::uint8_t>(0)[7], colour_of(k)[2]);
}

TEST(TarShardsTest, PythonPaxShardsWithUtf8NamesReadInAnyLocale) {
  // Python's tarfile stores a non-ASCII name in a pax header, as UTF-8. In the C
  // locale (this process never calls setlocale; LANG=C) libarchive cannot spell
  // it and says so with ARCHIVE_WARN, which must not reject the shard.
  TempDir dir;
  const std::string key = "caf\xc3\xa9/\xe7\x8c\xab";  // café/猫
  testing::write_python_pax_tar(dir / "pax.tar", sample_members(3, key));
  ASSERT_STREQ(std::setlocale(LC_ALL, nullptr), "C");
  expect_sample(dir / "pax.tar", key, 3);
  if (std::setlocale(LC_ALL, "C.UTF-8")) {
    expect_sample(dir / "pax.tar", key, 3);
    std::setlocale(LC_ALL, "C");
  }
  // The same, written by Python itself where it is installed.
  if (!testing_util::python_has("tarfile")) {
    if (testing_util::cross_checks_required())
      ADD_FAILURE() << "/usr/bin/python3 has no tarfile";
  } else {
    testing::write_file(dir / "k.png", png_of(4));
    const std::string script =
        "import sys, tarfile\n"
        "with tarfile.open(sys.argv[1] + '/py.tar', 'w', format=tarfile.PAX_FORMAT) "
        "as t:\n"
        "    t.add(sys.argv[1] + '/k.png', arcname='na\\u00efve.png')\n"
        "    t.add(sys.argv[1] + '/k.cls', arcname='na\\u00efve.cls')\n";
    testing::write_file(dir / "k.cls", text("104"));
    testing::write_file(dir / "w.py", script.data(), script.size());
    const auto r = testing_util::run_command("LANG=C LC_ALL=C /usr/bin/python3 " +
                                             (dir / "w.py") + " " + dir.path() + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    expect_sample(dir / "py.tar", "na\xc3\xafve", 4);
  }
}

}  // namespace
}  // namespace seedloader
