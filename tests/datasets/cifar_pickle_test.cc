// Cifar10 over the pickled layout torchvision downloads (cifar-10-batches-py):
// reading, agreement with torchvision's own CIFAR10 class, and the strict
// reader's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "seedloader/datasets/cifar10.h"
#include "seedloader/transforms/spec.h"
#include "tests/common/cross_check.h"
#include "tests/datasets/cifar_pickle_writer.h"
#include "tests/datasets/dataset_test_util.h"

namespace seedloader {
namespace {

using testing::cifar_pickle_batch;
using testing::cifar_pickle_label;
using testing::cifar_pickle_meta;
using testing::cifar_pickle_pixel;
using testing::CifarPickleOptions;
using testing::contains;
using testing::SampleBuffer;
using testing::TempDir;
using testing::test_rng;
using testing::write_file;

// data_batch_b holds samples 3 (b - 1) .. 3 b - 1; test_batch samples 100, 101.
void write_pickled(const std::string& folder, std::size_t rows = 3) {
  for (int b = 1; b <= 5; ++b) {
    CifarPickleOptions o;
    o.rows = rows;
    o.first = static_cast<int>(rows) * (b - 1);
    write_file(folder + "/data_batch_" + std::to_string(b), cifar_pickle_batch(o));
  }
  CifarPickleOptions test;
  test.rows = 2;
  test.first = 100;
  write_file(folder + "/test_batch", cifar_pickle_batch(test));
  write_file(folder + "/batches.meta", cifar_pickle_meta(rows));
}

// The image of sample `index` as CHW uint8, and its label.
std::pair<std::vector<std::uint8_t>, std::int64_t> sample(const Cifar10& data,
                                                          std::uint64_t index) {
  SampleBuffer buffer(data.layout(), index);
  Rng rng = test_rng();
  data.get(index, rng, buffer.writer());
  const auto image = buffer.field<std::uint8_t>(0);
  return {{image.begin(), image.end()}, buffer.field<std::int64_t>(1)[0]};
}

void expect_sample(const Cifar10& data, std::uint64_t index, int s) {
  const auto [image, label] = sample(data, index);
  ASSERT_EQ(image.size(), 3072u);
  for (int p = 0; p < 3072; ++p)
    ASSERT_EQ(image[p], cifar_pickle_pixel(s, p)) << "sample " << index << " byte " << p;
  EXPECT_EQ(label, cifar_pickle_label(s)) << "sample " << index;
}

// The DataError message of opening the train split of `dir`, "" if none.
std::string open_error(const std::string& dir, Split split = Split::kTrain) {
  try {
    Cifar10 data(dir, split);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// Replaces the first occurrence of `from` in `bytes` with `to`.
void replace(std::vector<std::uint8_t>& bytes, const std::string& from,
             const std::string& to) {
  const auto at = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
  ASSERT_NE(at, bytes.end()) << from;
  const auto pos = at - bytes.begin();
  bytes.erase(at, at + static_cast<std::ptrdiff_t>(from.size()));
  bytes.insert(bytes.begin() + pos, to.begin(), to.end());
}

// Writes `bytes` as test_batch (with a valid meta) and returns the test split's error.
std::string test_batch_error(const TempDir& dir, const std::vector<std::uint8_t>& bytes) {
  write_file(dir / "test_batch", bytes);
  write_file(dir / "batches.meta", cifar_pickle_meta());
  return open_error(dir.path(), Split::kTest);
}

TEST(Cifar10PickleTest, TorchvisionFolderReadsTrainAndTestSplits) {
  TempDir dir;
  write_pickled(dir / "cifar-10-batches-py");
  Cifar10 train(dir.path(), Split::kTrain, parse_transform_spec("u8"));
  ASSERT_EQ(train.size(), 15u);
  for (std::uint64_t i : {0u, 2u, 3u, 8u, 14u})
    expect_sample(train, i, static_cast<int>(i));
  Cifar10 test(dir.path(), Split::kTest, parse_transform_spec("u8"));
  ASSERT_EQ(test.size(), 2u);
  expect_sample(test, 1, 101);
}

TEST(Cifar10PickleTest, TheBatchesFolderItselfIsAccepted) {
  TempDir dir;
  write_pickled(dir / "cifar-10-batches-py");
  Cifar10 test(dir / "cifar-10-batches-py", Split::kTest, parse_transform_spec("u8"));
  ASSERT_EQ(test.size(), 2u);
  expect_sample(test, 0, 100);
}

// 1001 rows: a 1000-item APPENDS batch then one APPEND, and more than 255 memo
// entries, so LONG_BINPUT, as in the real 10000-row files.
TEST(Cifar10PickleTest, LongListsWithAppendAndLongBinputAreRead) {
  TempDir dir;
  write_pickled(dir.path(), 1001);
  const std::vector<std::uint8_t> bytes = testing::read_file(dir / "data_batch_1");
  EXPECT_NE(std::find(bytes.begin(), bytes.end(), 'r'), bytes.end());
  Cifar10 train(dir.path(), Split::kTrain, parse_transform_spec("u8"));
  ASSERT_EQ(train.size(), 5005u);
  for (std::uint64_t i : {999u, 1000u, 1001u, 5004u})
    expect_sample(train, i, static_cast<int>(i));
}

TEST(Cifar10PickleTest, AFolderInNeitherLayoutNamesBothLayouts) {
  TempDir dir;
  write_file(dir / "README", "not CIFAR", 9);
  for (const std::string& where : {dir.path(), dir / "absent"}) {
    const std::string error = open_error(where);
    EXPECT_TRUE(contains(error, where)) << error;
    EXPECT_TRUE(contains(error, "cifar-10-batches-bin")) << error;
    EXPECT_TRUE(contains(error, "cifar-10-batches-py")) << error;
  }
}

TEST(Cifar10PickleTest, MissingBatchesMetaIsADataErrorNamingIt) {
  TempDir dir;
  write_pickled(dir.path());
  std::filesystem::remove(dir / "batches.meta");
  EXPECT_TRUE(contains(open_error(dir.path()), "batches.meta"));
}

// torchvision.datasets.CIFAR10 itself (its md5 check of the real download
// skipped) loads the generated files; every image and label must agree.
TEST(Cifar10PickleTest, TorchvisionCifar10SeesTheSameImagesAndLabels) {
  SL_REQUIRE_PYTHON_MODULE("torchvision");
  TempDir dir;
  write_pickled(dir / "cifar-10-batches-py", 1001);
  const std::string script =
      "import sys\n"
      "import torchvision\n"
      "class Local(torchvision.datasets.CIFAR10):\n"
      "    meta = {'filename': 'batches.meta', 'key': 'label_names', 'md5': None}\n"
      "    def _check_integrity(self):\n"
      "        return True\n"
      "root, out = sys.argv[1], sys.argv[2]\n"
      "for split, train in (('train', True), ('test', False)):\n"
      "    d = Local(root, train=train, download=False)\n"
      "    d.data.tofile(out + '/' + split + '.hwc')\n"
      "    with open(out + '/' + split + '.labels', 'w') as f:\n"
      "        f.write(' '.join(str(t) for t in d.targets))\n"
      "    print(split, d.data.shape, len(d.classes), d.classes[9])\n";
  const auto r = testing_util::run_python("cifar_pickle_check.py", script,
                                          dir.path() + " " + dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "train (5005, 32, 32, 3) 10 truck\n"
            "test (2, 32, 32, 3) 10 truck\n");
  for (const auto& [name, split] :
       {std::pair{"train", Split::kTrain}, {"test", Split::kTest}}) {
    Cifar10 data(dir.path(), split, parse_transform_spec("u8"));
    const std::vector<std::uint8_t> hwc =
        testing::read_file(dir / (std::string(name) + ".hwc"));
    std::vector<std::int64_t> labels;
    {
      std::ifstream in(dir / (std::string(name) + ".labels"));
      for (std::int64_t v; in >> v;) labels.push_back(v);
    }
    ASSERT_EQ(hwc.size(), data.size() * 3072) << name;
    ASSERT_EQ(labels.size(), data.size()) << name;
    for (std::uint64_t i = 0; i < data.size(); ++i) {
      const auto [chw, label] = sample(data, i);
      ASSERT_EQ(label, labels[i]) << name << " sample " << i;
      for (int c = 0; c < 3; ++c) {
        for (int p = 0; p < 1024; ++p) {
          ASSERT_EQ(chw[c * 1024 + p], hwc[i * 3072 + p * 3 + c])
              << name << " sample " << i << " channel " << c << " pixel " << p;
        }
      }
    }
  }
}

// Python 3's pickle at protocol 2 stores bytes as GLOBAL _codecs encode: refused,
// with the GLOBAL named.
TEST(Cifar10PickleTest, Python3ProtocolTwoPickleIsRefusedNamingTheGlobal) {
  SL_REQUIRE_PYTHON_MODULE("numpy");
  TempDir dir;
  const std::string script =
      "import pickle, sys\n"
      "import numpy as np\n"
      "d = {'data': np.zeros((2, 3072), np.uint8), 'labels': [1, 2],\n"
      "     'batch_label': 'b', 'filenames': ['a', 'b']}\n"
      "with open(sys.argv[1], 'wb') as f:\n"
      "    pickle.dump(d, f, protocol=2)\n";
  const auto r =
      testing_util::run_python("cifar_py3_pickle.py", script, dir / "test_batch");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  write_file(dir / "batches.meta", cifar_pickle_meta());
  const std::string error = open_error(dir.path(), Split::kTest);
  EXPECT_TRUE(contains(error, "test_batch: byte ")) << error;
  EXPECT_TRUE(contains(error, "_codecs encode")) << error;
}

TEST(Cifar10PickleTest, EveryTruncationIsADataErrorNamingTheFile) {
  TempDir dir;
  CifarPickleOptions o;
  o.rows = 1;
  const std::vector<std::uint8_t> full = cifar_pickle_batch(o);
  for (std::size_t cut = 0; cut < full.size();
       cut += cut < 400 || cut > full.size() - 400 ? 1 : 97) {
    const std::string error = test_batch_error(
        dir, std::vector<std::uint8_t>(full.begin(), full.begin() + cut));
    ASSERT_TRUE(contains(error, "test_batch")) << "cut at " << cut << ": " << error;
  }
  EXPECT_EQ(test_batch_error(dir, full), "");
}

TEST(Cifar10PickleTest, AnyOtherGlobalIsRefused) {
  TempDir dir;
  auto bytes = cifar_pickle_batch({});
  replace(bytes, "cnumpy.core.multiarray\n_reconstruct\n", "cos\nsystem\n");
  const std::string error = test_batch_error(dir, bytes);
  EXPECT_TRUE(contains(error, "GLOBAL os system")) << error;
  EXPECT_TRUE(contains(error, "test_batch: byte 14:")) << error;
}

TEST(Cifar10PickleTest, OtherDtypeShapeOrOrderIsRefused) {
  TempDir dir;
  CifarPickleOptions f4;
  f4.dtype = "<f4";
  EXPECT_TRUE(
      contains(test_batch_error(dir, cifar_pickle_batch(f4)), "'<f4', expected 'u1'"));
  CifarPickleOptions shape;
  shape.columns = 3071;
  EXPECT_TRUE(contains(test_batch_error(dir, cifar_pickle_batch(shape)), "(3, 3071)"));
  // 2^24 + 1 rows: above the bound, refused on the shape before the data.
  auto many = cifar_pickle_batch({});
  replace(many, std::string("K\x03M\x00\x0c", 5),
          std::string("J\x01\x00\x00\x01M\x00\x0c", 8));
  EXPECT_TRUE(contains(test_batch_error(dir, many), "(16777217, 3072)"));
  CifarPickleOptions fortran;
  fortran.fortran = true;
  EXPECT_TRUE(contains(test_batch_error(dir, cifar_pickle_batch(fortran)), "NEWTRUE"));
}

TEST(Cifar10PickleTest, ExtraKeyLabelOutOfRangeOrWrongLabelCountIsRefused) {
  TempDir dir;
  CifarPickleOptions extra;
  extra.extra_key = true;
  EXPECT_TRUE(contains(test_batch_error(dir, cifar_pickle_batch(extra)), "key 'extra'"));
  CifarPickleOptions label;
  label.label_override = 10;
  EXPECT_TRUE(contains(test_batch_error(dir, cifar_pickle_batch(label)), "label 10"));
  CifarPickleOptions count;
  count.labels = 2;
  EXPECT_TRUE(
      contains(test_batch_error(dir, cifar_pickle_batch(count)), "2 labels for 3 rows"));
}

TEST(Cifar10PickleTest, LengthBeyondTheFileIsRefusedBeforeAllocating) {
  TempDir dir;
  auto bytes = cifar_pickle_batch({});
  // The pixel BINSTRING's length (3 * 3072 = 0x2400) becomes 2 GiB - 1.
  replace(bytes, std::string("T\x00\x24\x00\x00", 5),
          std::string("T\xff\xff\xff\x7f", 5));
  EXPECT_TRUE(contains(test_batch_error(dir, bytes), "runs past the end of the file"));
  // A key of 4 GiB - 1 (BINUNICODE), far above the string bound.
  bytes = cifar_pickle_batch({});
  replace(bytes,
          std::string("(U\x04"
                      "data",
                      7),
          std::string("(X\xff\xff\xff\xff", 6));
  EXPECT_TRUE(contains(test_batch_error(dir, bytes), "above the limit"));
}

TEST(Cifar10PickleTest, DeepNestingBingetAndTrailingBytesAreRefused) {
  TempDir dir;
  auto bytes = cifar_pickle_batch({});
  replace(bytes,
          std::string("(U\x04"
                      "data",
                      7),
          std::string(100000, '(') + std::string("U\x04"
                                                 "data",
                                                 6));
  EXPECT_TRUE(contains(test_batch_error(dir, bytes), "found MARK"));
  bytes = cifar_pickle_batch({});
  replace(bytes,
          "U\x0b"
          "batch_label",
          "h\x01");
  EXPECT_TRUE(contains(test_batch_error(dir, bytes), "found BINGET"));
  bytes = cifar_pickle_batch({});
  bytes.push_back('N');
  EXPECT_TRUE(contains(test_batch_error(dir, bytes), "1 bytes follow STOP"));
}

TEST(Cifar10PickleTest, BinaryLayoutFolderWinsAndStillReads) {
  TempDir dir;
  write_pickled(dir / "cifar-10-batches-py");
  std::vector<std::uint8_t> record(3073, 7);
  record[0] = 4;
  write_file(dir / "cifar-10-batches-bin/test_batch.bin", record);
  Cifar10 test(dir.path(), Split::kTest, parse_transform_spec("u8"));
  ASSERT_EQ(test.size(), 1u);
  EXPECT_EQ(sample(test, 0).second, 4);
}

}  // namespace
}  // namespace seedloader
