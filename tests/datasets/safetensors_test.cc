#include "loader/datasets/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "seedloader/datasets/tensor_file.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;

template <typename T>
std::span<const std::uint8_t> as_bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(T)};
}

// x: F32 [4, 2, 3] = 0..23, y: I64 [4] = 10, 11, 12, 13.
void write_xy(const std::string& path) {
  std::vector<float> x(24);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<std::int64_t> y = {10, 11, 12, 13};
  const SafetensorsWrite tensors[] = {{"x", "F32", {4, 2, 3}, as_bytes(x)},
                                      {"y", "I64", {4}, as_bytes(y)}};
  write_safetensors(path, tensors, {{"epoch", "3"}});
}

// A file written byte by byte: 8-byte length, `header`, `data_bytes` zero bytes.
void write_raw(const std::string& path, const std::string& header, std::size_t data_bytes,
               std::uint64_t claimed_length = 0) {
  std::vector<std::uint8_t> bytes;
  const std::uint64_t n = claimed_length ? claimed_length : header.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + data_bytes);
  testing::write_file(path, bytes);
}

std::string open_error(const std::string& path) {
  try {
    SafetensorsFile file(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(SafetensorsTest, WrittenTensorsAndMetadataReadBack) {
  TempDir dir;
  write_xy(dir / "a.safetensors");
  SafetensorsFile file(dir / "a.safetensors");
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "x");
  EXPECT_EQ(file.tensors()[0].shape, (std::vector<std::uint64_t>{4, 2, 3}));
  EXPECT_EQ(file.metadata().at("epoch"), "3");
  const auto y = file.read(*file.find("y"));
  ASSERT_EQ(y.size(), 32u);
  std::int64_t third;
  std::memcpy(&third, y.data() + 16, 8);
  EXPECT_EQ(third, 12);
  const auto raw = testing::read_file(dir / "a.safetensors");
  std::uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);  // data section aligned
}

TEST(SafetensorsTest, ForgedHeaderLengthIsRejectedBeforeAnyAllocation) {
  TempDir dir;
  write_raw(dir / "f.safetensors", "{}", 0, std::uint64_t{1} << 62);
  EXPECT_NE(open_error(dir / "f.safetensors").find("exceeds the file"),
            std::string::npos);
}

TEST(SafetensorsTest, OffsetsOutsideTheDataAreRejected) {
  TempDir dir;
  write_raw(
      dir / "f.safetensors",
      R"({"x":{"dtype":"U8","shape":[1000000000000],"data_offsets":[0,1000000000000]}})",
      16);
  EXPECT_NE(open_error(dir / "f.safetensors").find("outside"), std::string::npos);
}

TEST(SafetensorsTest, BytesAfterTheLastTensorAreRejected) {
  TempDir dir;
  write_raw(dir / "f.safetensors",
            R"({"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 7);
  const std::string error = open_error(dir / "f.safetensors");
  EXPECT_NE(error.find("3 trailing bytes after the last tensor's data"),
            std::string::npos)
      << error;
  write_raw(dir / "g.safetensors",
            R"({"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 4);
  EXPECT_EQ(open_error(dir / "g.safetensors"), "");  // exactly whole
}

TEST(SafetensorsTest, ShapeThatDisagreesWithTheOffsetsIsRejected) {
  TempDir dir;
  write_raw(dir / "f.safetensors",
            R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8);
  EXPECT_NE(open_error(dir / "f.safetensors").find("does not match"), std::string::npos);
  // An overflowing shape product is a mismatch too, not a wrap-around.
  write_raw(
      dir / "g.safetensors",
      R"({"x":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
  EXPECT_NE(open_error(dir / "g.safetensors").find("does not match"), std::string::npos);
}

TEST(SafetensorsTest, OverlappingUnknownAndMalformedEntriesAreRejected) {
  TempDir dir;
  write_raw(dir / "o.safetensors",
            R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
            8);
  EXPECT_NE(open_error(dir / "o.safetensors").find("overlap"), std::string::npos);
  write_raw(dir / "d.safetensors",
            R"({"a":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(open_error(dir / "d.safetensors").find("unknown dtype"), std::string::npos);
  write_raw(dir / "n.safetensors",
            R"({"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(open_error(dir / "n.safetensors").find("negative"), std::string::npos);
  write_raw(dir / "j.safetensors", "{not json", 0);
  EXPECT_NE(open_error(dir / "j.safetensors").find("not JSON"), std::string::npos);
  write_raw(dir / "s.safetensors", "", 0);
  testing::write_file(dir / "s.safetensors", "abc", 3);
  EXPECT_NE(open_error(dir / "s.safetensors").find("shorter than 8"), std::string::npos);
}

// Under the 100 MB header cap, 50 MB of '[' took 4 GB as a parsed document; the
// parse now stops at the first container deeper than the format nests.
TEST(SafetensorsTest, HeadersNestedOrWiderThanTheFormatAreRejectedAsTheyParse) {
  TempDir dir;
  const std::string deep = std::string(4u << 20, '[') + std::string(4u << 20, ']');
  write_raw(dir / "deep.safetensors", deep, 0);
  EXPECT_NE(open_error(dir / "deep.safetensors").find("header is not an object"),
            std::string::npos);
  write_raw(dir / "deep_entry.safetensors", "{\"a\":" + deep + "}", 0);
  EXPECT_NE(open_error(dir / "deep_entry.safetensors").find("nests deeper"),
            std::string::npos);
  std::string wide = R"({"a":{"dtype":"U8","shape":[)";
  for (int i = 0; i < 65; ++i) wide += i ? ",1" : "1";
  write_raw(dir / "wide.safetensors", wide + R"(],"data_offsets":[0,1]}})", 1);
  EXPECT_NE(open_error(dir / "wide.safetensors").find("more than 64 items"),
            std::string::npos);
  std::string keys = R"({"__metadata__":{)";
  for (int i = 0; i <= 4096; ++i)
    keys += (i ? ",\"" : "\"") + std::to_string(i) + "\":\"v\"";
  write_raw(dir / "keys.safetensors", keys + "}}", 0);
  EXPECT_NE(open_error(dir / "keys.safetensors").find("more than 4096 keys"),
            std::string::npos);
  write_raw(dir / "twice.safetensors",
            R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
            R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
            2);
  EXPECT_NE(open_error(dir / "twice.safetensors").find("'a' appears twice"),
            std::string::npos);
}

TEST(SafetensorsTest, TensorsAreListedByNameWhateverTheHeaderOrder) {
  TempDir dir;
  write_raw(dir / "order.safetensors",
            R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
            R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
            2);
  SafetensorsFile file(dir / "order.safetensors");
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].name, "a");
  EXPECT_EQ(file.tensors()[1].name, "b");
}

TEST(SafetensorsTest, WriterRejectsSizeMismatchAndDuplicates) {
  TempDir dir;
  std::vector<float> x(5);
  const SafetensorsWrite bad[] = {{"x", "F32", {4}, as_bytes(x)}};
  EXPECT_THROW(write_safetensors(dir / "b.safetensors", bad), ConfigError);
  const SafetensorsWrite dup[] = {{"x", "F32", {5}, as_bytes(x)},
                                  {"x", "F32", {5}, as_bytes(x)}};
  EXPECT_THROW(write_safetensors(dir / "b.safetensors", dup), ConfigError);
}

TEST(SafetensorsTest, NumpyReadsWhatTheWriterWrote) {
  SL_REQUIRE_PYTHON_MODULE("numpy");
  TempDir dir;
  write_xy(dir / "a.safetensors");
  const std::string script =
      "import json,struct,sys,numpy as np\n"
      "b=open(sys.argv[1],'rb').read(); n=struct.unpack('<Q',b[:8])[0]\n"
      "h=json.loads(b[8:8+n]); s,e=h['x']['data_offsets']\n"
      "x=np.frombuffer(b[8+n+s:8+n+e],dtype='<f4').reshape(h['x']['shape'])\n"
      "print(int(x[2,1,2]), h['__metadata__']['epoch'])\n";
  testing::write_file(dir / "read.py", script.data(), script.size());
  const auto result = testing_util::run_command("/usr/bin/python3 " + (dir / "read.py") +
                                                " " + (dir / "a.safetensors"));
  EXPECT_EQ(result.out, "17 3\n");
}

TEST(TensorFileTest, SampleIsRowIOfEachTensor) {
  TempDir dir;
  write_xy(dir / "a.safetensors");
  TensorFile data(dir / "a.safetensors");
  ASSERT_EQ(data.size(), 4u);
  EXPECT_EQ(data.layout().field(0).shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_TRUE(data.layout().field(1).shape.empty());
  SampleBuffer buffer(data.layout(), 2);
  Rng rng = test_rng();
  data.get(2, rng, buffer.writer());
  auto x = buffer.field<float>(0);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(x[k], 12.0f + k);
  EXPECT_EQ(buffer.field<std::int64_t>(1)[0], 12);
  EXPECT_NE(testing::get_error(data, 4).find("out of range"), std::string::npos);
}

TEST(TensorFileTest, DisagreeingRowsUnknownNamesAndDtypesAreRejected) {
  TempDir dir;
  std::vector<float> x(6);
  std::vector<std::int64_t> y(4);
  std::vector<std::uint16_t> h(3);
  const SafetensorsWrite rows[] = {{"x", "F32", {3, 2}, as_bytes(x)},
                                   {"y", "I64", {4}, as_bytes(y)},
                                   {"h", "F16", {3}, as_bytes(h)},
                                   {"s", "U16", {3}, as_bytes(h)},
                                   {"b", "BOOL", {3, 2}, as_bytes(h)}};
  write_safetensors(dir / "r.safetensors", rows);
  EXPECT_THROW(TensorFile(dir / "r.safetensors", {"x", "y"}), DataError);
  EXPECT_THROW(TensorFile(dir / "r.safetensors", {"z"}), ConfigError);
  try {
    TensorFile(dir / "r.safetensors", {"s"});
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("'s' has dtype U16"), std::string::npos);
  }
  // Half, bfloat16 and bool tensors are fields like any other.
  EXPECT_EQ(TensorFile(dir / "r.safetensors", {"x", "h"}).layout().field(1).dtype,
            DType::kF16);
  const TensorFile flags(dir / "r.safetensors", {"b"});
  EXPECT_EQ(flags.layout().field(0).dtype, DType::kBool);
  EXPECT_EQ(flags.layout().field(0).bytes(), 2u);
}

TEST(TensorFileTest, FifoIsADataErrorNotAWait) {
  TempDir dir;
  testing::make_fifo(dir / "t.safetensors");
  const std::string error = testing::data_error_without_waiting(
      dir / "t.safetensors", [&] { TensorFile(dir / "t.safetensors"); });
  EXPECT_TRUE(testing::contains(error, "t.safetensors")) << error;
  EXPECT_TRUE(testing::contains(error, "FIFO")) << error;
}

TEST(TensorFileTest, FileTruncatedWhileInUseIsADataErrorNotSigbus) {
  TempDir dir;
  // 1000 rows of 64 floats (256 KB): the last rows are pages past a cut.
  std::vector<float> x(64'000, 1.5f);
  const SafetensorsWrite tensors[] = {{"x", "F32", {1000, 64}, as_bytes(x)}};
  write_safetensors(dir / "t.safetensors", tensors);
  TensorFile data(dir / "t.safetensors");
  std::filesystem::resize_file(dir / "t.safetensors", 4096 + 100);
  EXPECT_EQ(testing::get_error(data, 0), "");
  const std::string error = testing::get_error(data, 999);
  EXPECT_TRUE(testing::contains(error, "t.safetensors")) << error;
  EXPECT_TRUE(testing::contains(error, "sample 999")) << error;
}

}  // namespace
}  // namespace seedloader
