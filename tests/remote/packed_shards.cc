#include "tests/remote/packed_shards.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tests/common/run_command.h"

namespace seedloader::testing_util {

std::map<std::string, std::uint64_t> write_packed(const TempDir& root) {
  const std::string src = root / "src";
  for (int i = 0; i < 40; ++i) {
    const std::string cls = src + "/class" + std::to_string(i % 2);
    std::filesystem::create_directories(cls);
    cv::Mat image(36 + i % 7, 44 + i % 5, CV_8UC3);
    cv::randu(image, 0, 255);
    cv::imwrite(cls + "/" + std::to_string(i) + ".jpg", image);
  }
  const auto r = run_command(std::string(SEEDLOADER_PACK) + " imagefolder:" + src + " " +
                             (root / "data") + " --shard-size 16K 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::map<std::string, std::uint64_t> shards;
  for (const auto& f : std::filesystem::directory_iterator(root / "data")) {
    if (f.path().extension() == ".tar") shards[f.path().filename()] = f.file_size();
  }
  EXPECT_GE(shards.size(), 4u);
  return shards;
}

TarShardsOptions cached_in(const std::string& dir, std::uint64_t limit) {
  TarShardsOptions o;
  o.cache_dir = dir;
  o.cache_limit = limit;
  o.max_attempts = 3;
  o.stall_timeout_s = 5;
  return o;
}

LoaderOptions loader_options(int workers, ShuffleOrder order) {
  LoaderOptions opt;
  opt.batch_size = 4;
  opt.num_workers = workers;
  opt.shuffle = true;
  opt.order = order;
  opt.shuffle_block = 8;
  opt.seed = 5;
  opt.seeding = SeedScope::kSample;
  opt.timeout = std::chrono::milliseconds(60'000);
  return opt;
}

EpochBytes run_epoch(const Dataset& data, int workers, std::uint64_t epoch,
                     std::uint64_t start, ShuffleOrder order) {
  DataLoader loader(data, loader_options(workers, order));
  loader.resume(epoch, start);
  return epoch_bytes(loader, data.layout());
}

}  // namespace seedloader::testing_util
