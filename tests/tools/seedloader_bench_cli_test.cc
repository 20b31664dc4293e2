// seedloader-bench's reports: --decode-reference on a generated JPEG folder puts
// the decode-only rate and the per-worker ratio beside samples/s, and the main
// process's CPU per batch is always reported; --decode-reference on data that
// is not an image folder is a usage error (exit 2) that says what it needs.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>

#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader {
namespace {

using testing_util::run_command;
using testing_util::TempDir;

// root/c{0,1}/NN.jpg: `n` noisy 64x48 JPEGs in two classes.
void write_jpeg_folder(const TempDir& dir, int n) {
  cv::RNG rng(7);
  for (int i = 0; i < n; ++i) {
    const std::string cls = dir / ("c" + std::to_string(i % 2));
    std::filesystem::create_directories(cls);
    cv::Mat image(48, 64, CV_8UC3);
    rng.fill(image, cv::RNG::UNIFORM, 0, 256);
    ASSERT_TRUE(cv::imwrite(cls + "/" + std::to_string(i) + ".jpg", image));
  }
}

// Runs seedloader-bench with `args` (shell words; may redirect).
testing_util::CommandResult bench(const std::string& args) {
  return run_command(std::string(SEEDLOADER_BENCH) + " " + args);
}

nlohmann::json last_json_line(const std::string& out) {
  const std::size_t end = out.find_last_not_of('\n');
  const std::size_t begin = out.rfind('\n', end);
  return nlohmann::json::parse(
      out.substr(begin == std::string::npos ? 0 : begin + 1, end + 1));
}

TEST(SeedloaderBenchCliTest, DecodeReferenceReportsTheRateBesideSamplesPerSecond) {
  TempDir dir;
  write_jpeg_folder(dir, 24);
  for (int workers : {0, 1}) {
    const auto r = bench("--data imagefolder:" + dir.path() +
                         " --transform rrc:32,hflip,u8 --batch-size 8 --workers " +
                         std::to_string(workers) +
                         " --batches 3 --warmup 1 --decode-reference 10 --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const nlohmann::json j = last_json_line(r.out);
    EXPECT_EQ(j.at("decode_reference_images"), 10) << r.out;
    EXPECT_GT(j.at("decode_only_per_s").get<double>(), 0) << r.out;
    EXPECT_GT(j.at("per_worker_vs_decode").get<double>(), 0) << r.out;
    EXPECT_GT(j.at("main_cpu_s_per_batch").get<double>(), 0) << r.out;
    EXPECT_GT(j.at("main_cpu_share").get<double>(), 0) << r.out;
    EXPECT_GT(j.at("peak_memory_bytes").get<double>(), 0) << r.out;
  }
}

TEST(SeedloaderBenchCliTest, TextReportNamesTheDecodeRateAndMainCpu) {
  TempDir dir;
  write_jpeg_folder(dir, 16);
  const auto r = bench("--data imagefolder:" + dir.path() +
                       " --transform rrc:32,u8 --batch-size 8 --workers 1 "
                       "--batches 2 --warmup 1 --decode-reference 4 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("full-size decode only, this core: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pipeline per worker: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("main process: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("us CPU per batch"), std::string::npos) << r.out;
}

TEST(SeedloaderBenchCliTest, WithoutDecodeReferenceTheJsonHasNoDecodeFields) {
  const auto r = bench(
      "--data synthetic:64 --batch-size 8 --workers 1 "
      "--batches 2 --warmup 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = last_json_line(r.out);
  EXPECT_FALSE(j.contains("decode_only_per_s")) << r.out;
  EXPECT_TRUE(j.contains("main_cpu_share")) << r.out;
}

TEST(SeedloaderBenchCliTest, MeasuresOneRankOfAnElasticPartition) {
  const auto r = bench(
      "--data synthetic:64 --transform rrc:16 --batch-size 4 --workers 1 --batches 2 "
      "--warmup 1 --partition elastic --seeding sample --world-size 4 --rank 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out).at("batches"), 2) << r.out;
  const auto worker = bench(
      "--data synthetic:64 --transform rrc:16 --partition elastic --world-size 2 2>&1");
  EXPECT_EQ(worker.exit_code, 2) << worker.out;
  EXPECT_NE(worker.out.find("partition elastic needs seeding sample"), std::string::npos)
      << worker.out;
}

TEST(SeedloaderBenchCliTest, DecodeReferenceOnSyntheticDataIsAUsageError) {
  const auto r = bench(
      "--data synthetic:64 --batch-size 8 --workers 1 "
      "--batches 2 --decode-reference 10 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--decode-reference needs --data imagefolder:DIR"),
            std::string::npos)
      << r.out;
}

TEST(SeedloaderBenchCliTest, DecodeReferenceOnAFolderWithoutJpegsSaysSo) {
  TempDir dir;
  std::filesystem::create_directories(dir / "c");
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(cv::imwrite(dir / ("c/" + std::to_string(i) + ".png"),
                            cv::Mat(8, 8, CV_8UC3, cv::Scalar(i, 2, 3))));
  }
  const auto r = bench("--data imagefolder:" + dir.path() +
                       " --transform centercrop:8,u8 --batch-size 4 --workers 0 "
                       "--batches 1 --decode-reference 10 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("holds no JPEG"), std::string::npos) << r.out;
}

TEST(SeedloaderBenchCliTest, ANegativeSeedIsAUsageErrorAsInTheOtherTools) {
  const auto r = bench("--data synthetic:16 --batch-size 4 --batches 1 --seed -1 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--seed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace seedloader
