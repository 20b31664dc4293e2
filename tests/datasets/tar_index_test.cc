// TarShards over a packed folder: sized from index.json without opening a shard,
// the same samples as the shards read by pattern, and a shard that disagrees with
// the index (size, XXH64, sample count) or a malformed index is a DataError naming
// the shard and the index.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/datasets/dataset_test_util.h"
#include "tests/datasets/tar_writer.h"

namespace seedloader {
namespace {

using testing::Member;
using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;

std::string hex64(std::uint64_t v) {
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(v));
  return out;
}

// Three shards of 4, 3 and 5 samples (PNG images of varying colour, labels
// 10 + k) and the index.json seedloader-pack would write for them.
nlohmann::json write_packed(const TempDir& dir) {
  nlohmann::json index = {
      {"format", "seedloader.shards"}, {"format_version", 1}, {"fields", {"cls", "png"}}};
  int k = 0;
  for (int shard : {4, 3, 5}) {
    std::vector<Member> members;
    for (int i = 0; i < shard; ++i, ++k) {
      std::vector<std::uint8_t> png;
      cv::imencode(".png", cv::Mat(8, 10, CV_8UC3, cv::Scalar(k * 9, 200 - k, 3 * k)),
                   png);
      char key[16];
      std::snprintf(key, sizeof key, "%09d", k);
      const std::string label = std::to_string(10 + k);
      members.push_back({Member::kFile, std::string(key) + ".cls",
                         std::vector<std::uint8_t>(label.begin(), label.end()), ""});
      members.push_back({Member::kFile, std::string(key) + ".png", png, ""});
    }
    const std::string name = "00000" + std::to_string(index["shards"].size()) + ".tar";
    testing::write_tar(dir / name, members);
    const std::vector<std::uint8_t> bytes = testing::read_file(dir / name);
    index["shards"].push_back({{"name", name},
                               {"bytes", bytes.size()},
                               {"samples", shard},
                               {"xxh64", hex64(XXH64(bytes.data(), bytes.size(), 0))}});
  }
  index["samples"] = k;
  return index;
}

void save(const TempDir& dir, const nlohmann::json& index) {
  const std::string text = index.dump();
  testing::write_file(dir / "index.json",
                      std::vector<std::uint8_t>(text.begin(), text.end()));
}

std::vector<std::uint8_t> sample_bytes(const TarShards& data, std::uint64_t i) {
  SampleBuffer buffer(data.layout(), i);
  Rng rng = test_rng();
  data.get(i, rng, buffer.writer());
  auto image = buffer.field<std::uint8_t>(0);
  std::vector<std::uint8_t> out(image.begin(), image.end());
  const std::int64_t label = buffer.field<std::int64_t>(1)[0];
  out.push_back(static_cast<std::uint8_t>(label));
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "(no DataError)";
}

TEST(TarIndexTest, APackedFolderReadsLikeItsShards) {
  TempDir dir;
  save(dir, write_packed(dir));
  const char* crop = "rrc:6,hflip,u8";
  TarShards indexed(dir.path(), parse_transform_spec(crop));
  TarShards by_index_file(dir / "index.json", parse_transform_spec(crop));
  TarShards by_pattern(dir / "00000{0..2}.tar", parse_transform_spec(crop));
  ASSERT_EQ(indexed.size(), 12u);
  ASSERT_EQ(by_index_file.size(), 12u);
  for (std::uint64_t i = 12; i-- > 0;) {  // backwards: shards are read out of order
    EXPECT_EQ(sample_bytes(indexed, i), sample_bytes(by_pattern, i)) << i;
    EXPECT_EQ(sample_bytes(by_index_file, i), sample_bytes(by_pattern, i)) << i;
    EXPECT_EQ(indexed.key(i), by_pattern.key(i));
  }
  EXPECT_EQ(sample_bytes(indexed, 7).back(), 17);
  // Shard sizes, from the index and from the shards themselves.
  EXPECT_EQ(indexed.shard_sizes(), (std::vector<std::uint64_t>{4, 3, 5}));
  EXPECT_EQ(by_pattern.shard_sizes(), (std::vector<std::uint64_t>{4, 3, 5}));
}

TEST(TarIndexTest, TheIndexAloneSizesTheDataSet) {
  TempDir dir;
  nlohmann::json index = write_packed(dir);
  std::filesystem::remove(dir / "000002.tar");  // not opened until a sample needs it
  save(dir, index);
  TarShards data(dir.path(), parse_transform_spec("centercrop:6,u8"));
  EXPECT_EQ(data.size(), 12u);
  EXPECT_EQ(data.shard_sizes(), (std::vector<std::uint64_t>{4, 3, 5}));
  EXPECT_EQ(sample_bytes(data, 6).back(), 16);
  const std::string e = error_of([&] { sample_bytes(data, 9); });
  EXPECT_NE(e.find("000002.tar"), std::string::npos) << e;
  EXPECT_NE(e.find("sample 9"), std::string::npos) << e;
}

TEST(TarIndexTest, AShardThatDisagreesWithTheIndexIsNamed) {
  const char* crop = "centercrop:6,u8";
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&, const TempDir&)> change;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"bytes",
       [](nlohmann::json& j, const TempDir&) { j["shards"][1]["bytes"] = 1 << 20; },
       "bytes, the index says 1048576"},
      {"hash",
       [](nlohmann::json& j, const TempDir&) {
         j["shards"][1]["xxh64"] = "0123456789abcdef";
       },
       "its XXH64 differs from the index's"},
      {"count",
       [](nlohmann::json& j, const TempDir&) {
         j["shards"][1]["samples"] = 2;
         j["shards"][2]["samples"] = 6;
       },
       "holds 3 samples, the index says 2"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    nlohmann::json index = write_packed(dir);
    c.change(index, dir);
    save(dir, index);
    TarShards data(dir.path(), parse_transform_spec(crop));
    EXPECT_EQ(sample_bytes(data, 0).back(), 10) << c.what;  // shard 0 is fine
    const std::string e = error_of([&] { sample_bytes(data, 5); });
    EXPECT_NE(e.find("shard " + (dir / "000001.tar")), std::string::npos)
        << c.what << ": " << e;
    EXPECT_NE(e.find((dir / "index.json")), std::string::npos) << c.what << ": " << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << c.what << ": " << e;
  }
}

TEST(TarIndexTest, MalformedIndexesAndFoldersWithoutOneSayWhatIsWrong) {
  const char* crop = "centercrop:6,u8";
  {
    TempDir dir;
    write_packed(dir);
    const std::string e =
        error_of([&] { TarShards(dir.path(), parse_transform_spec(crop)); });
    EXPECT_NE(e.find("has no index.json"), std::string::npos) << e;
    EXPECT_NE(e.find("seedloader-pack"), std::string::npos) << e;
  }
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases =
      {
          {[](nlohmann::json& j) { j["format"] = "webdataset"; }, "format is not"},
          {[](nlohmann::json& j) { j["format_version"] = 2; },
           "format_version 2 is not 1"},
          {[](nlohmann::json& j) { j["samples"] = 13; },
           "samples is 13 but its shards hold 12"},
          {[](nlohmann::json& j) { j["shards"][0]["name"] = "../x.tar"; },
           "shard name '../x.tar' is not one file name"},
          // Names a server would decode into another path, or a NUL that would
          // end the name early: no shard name but one plain segment passes.
          {[](nlohmann::json& j) { j["shards"][0]["name"] = "..%2fsecret.tar"; },
           "shard name '..%2fsecret.tar' is not one file name"},
          {[](nlohmann::json& j) { j["shards"][0]["name"] = "%2e%2e%2fsecret.tar"; },
           "shard name '%2e%2e%2fsecret.tar' is not one file name"},
          {[](nlohmann::json& j) {
             j["shards"][0]["name"] = std::string("000000.tar\0evil", 15);
           },
           "shard name '000000.tar\\x00evil' is not one file name"},
          {[](nlohmann::json& j) { j["shards"][0]["name"] = ".hidden"; },
           "shard name '.hidden' is not one file name"},
          {[](nlohmann::json& j) { j["shards"][0]["name"] = std::string(201, 'a'); },
           "is not one file name of at most 200"},
          {[](nlohmann::json& j) { j["shards"][1]["name"] = j["shards"][0]["name"]; },
           "shard 000000.tar is listed twice"},
          {[](nlohmann::json& j) { j["shards"][0]["xxh64"] = "xyz"; },
           "is not 16 hex digits"},
          {[](nlohmann::json& j) { j["shards"][0].erase("bytes"); },
           "shard 000000.tar: has no \"bytes\""},
          // Integers are exact, in range, and named with their shard.
          {[](nlohmann::json& j) { j["format_version"] = 1.5; },
           "\"format_version\" is 1.5, not a whole number"},
          {[](nlohmann::json& j) { j["shards"][0]["samples"] = std::uint64_t{1} << 63; },
           "shard 000000.tar: \"samples\" is 9223372036854775808, not a whole number"},
          {[](nlohmann::json& j) { j["shards"][0]["samples"] = -4; },
           "shard 000000.tar: \"samples\" is -4, not a whole number"},
          {[](nlohmann::json& j) { j["shards"][0]["samples"] = 4.0; },
           "shard 000000.tar: \"samples\" is 4.0, not a whole number"},
          {[](nlohmann::json& j) { j["shards"][0]["bytes"] = "4096"; },
           "shard 000000.tar: \"bytes\" is \"4096\", not a whole number"},
          {[](nlohmann::json& j) { j["shards"][0]["samples"] = 1 << 30; },
           "shard 000000.tar: \"samples\" 1073741824 cannot fit in its \"bytes\""},
          {[](nlohmann::json& j) { j["shards"] = 3; },
           "\"shards\" is missing or not a list"},
          {[](nlohmann::json& j) { j["shards"] = nlohmann::json::array(); },
           "lists no shards"},
      };
  for (const auto& [change, message] : cases) {
    TempDir dir;
    nlohmann::json index = write_packed(dir);
    change(index);
    save(dir, index);
    const std::string e =
        error_of([&] { TarShards(dir.path(), parse_transform_spec(crop)); });
    EXPECT_NE(e.find(message), std::string::npos) << e;
    EXPECT_NE(e.find("index.json"), std::string::npos) << e;
  }
}

TEST(TarIndexTest, ADeeplyNestedValueIsNamedByItsTypeNotPrinted) {
  // 200,000 nested arrays: printing them (a recursive dump) would overflow the stack.
  TempDir dir;
  write_packed(dir);
  std::ofstream(dir / "index.json")
      << R"({"format": "seedloader.shards", "format_version": )"
      << std::string(200000, '[') << std::string(200000, ']') << "}";
  const std::string e =
      error_of([&] { TarShards(dir.path(), parse_transform_spec("centercrop:6,u8")); });
  EXPECT_NE(e.find("\"format_version\" is a JSON array, not a whole number"),
            std::string::npos)
      << e.substr(0, 300);
}

}  // namespace
}  // namespace seedloader
