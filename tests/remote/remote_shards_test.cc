// TarShards over HTTP (nginx) and S3 (rclone serve s3) on 127.0.0.1: the same
// batches as the packed folder read locally, the shard cache's bound, sharing and
// resumed downloads, and every failure named.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/file_io.h"
#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "remote/shard_cache.h"
#include "seedloader/data_loader.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/random.h"
#include "seedloader/transforms/spec.h"
#include "shards/index_format.h"
#include "tests/common/epoch_bytes.h"
#include "tests/common/error_of.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/datasets/dataset_test_util.h"
#include "tests/remote/local_servers.h"
#include "tests/remote/packed_shards.h"
#include "tests/remote/process_aws.h"

namespace seedloader {
namespace {

using testing_util::cached_in;
using testing_util::error_of;
using testing_util::kTransform;
using testing_util::loader_options;
using testing_util::Nginx;
using testing_util::RcloneS3;
using testing_util::run_epoch;
using testing_util::TempDir;
using testing_util::write_packed;
using Epoch = testing_util::EpochBytes;

// A complete shard's sidecar (NAME.<xxh64>.stat, its identity at download).
bool is_sidecar(const std::filesystem::path& p) { return p.extension() == ".stat"; }

// The bytes in a cache directory: complete shards, parts and sidecars, all of
// which the limit bounds.
std::uint64_t folder_bytes(const std::string& dir) {
  std::uint64_t total = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (f.is_regular_file()) total += f.file_size();
  }
  return total;
}

// A cache limit that holds shards of these sizes, with their sidecars.
std::uint64_t holding(std::initializer_list<std::uint64_t> shard_bytes) {
  std::uint64_t total = 0;
  for (const std::uint64_t bytes : shard_bytes)
    total += bytes + remote::ShardCache::kSidecarBytes;
  return total;
}

// The complete shards' files in a cache directory (no part, no sidecar), sorted.
std::vector<std::string> complete_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (f.is_regular_file() && f.path().extension() != ".part" && !is_sidecar(f.path()))
      out.push_back(f.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The shards index.json lists, as the cache takes them.
std::vector<shards::ShardEntry> index_shards(const std::string& index_json) {
  const FileHandle file(index_json);
  std::vector<std::uint8_t> text;
  file.read_at(0, file.size(), text);
  return shards::parse_index(text, index_json);
}

// Whether `shard` is complete in the cache directory `dir` now.
bool in_cache(const std::string& dir, const shards::ShardEntry& shard) {
  const std::string name = shard.name + "." + shards::hex64(shard.xxh64);
  std::error_code ec;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (f.path().filename() == name && f.is_regular_file() &&
        f.file_size() == shard.bytes)
      return true;
  }
  return false;
}

class RemoteShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shards_ = write_packed(root_);
    nginx_ = std::make_unique<Nginx>(root_.path(), root_ / "nginx");
  }
  std::string http() const { return nginx_->url() + "/data/"; }

  TempDir root_;
  std::map<std::string, std::uint64_t> shards_;
  std::unique_ptr<Nginx> nginx_;
};

TEST_F(RemoteShardsTest, HttpBatchesEqualTheLocalFoldersAtAnyWorkerCount) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  ASSERT_EQ(remote.size(), 40u);
  for (std::uint64_t epoch : {0, 1}) {
    const Epoch want = run_epoch(local, 0, epoch);
    ASSERT_EQ(want.size(), 40u);
    for (int workers : {0, 2}) {
      EXPECT_TRUE(run_epoch(remote, workers, epoch) == want)
          << "epoch " << epoch << ", " << workers << " workers";
    }
  }
  // Every shard was fetched once, whole, by whichever process needed it first.
  for (const auto& [name, bytes] : shards_) {
    EXPECT_EQ(nginx_->requests("/data/" + name),
              std::vector<std::string>{"200 " + std::to_string(bytes)})
        << name;
  }
}

TEST_F(RemoteShardsTest, TheCacheStaysWithinItsLimitPlusOneShard) {
  std::uint64_t largest = 0;
  for (const auto& [name, bytes] : shards_) largest = std::max(largest, bytes);
  const std::uint64_t limit = 2 * largest + largest / 2;
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache", limit));
  std::uint64_t peak = 0;
  for (int pass = 0; pass < 2; ++pass) {
    // Scattered reads: every other sample, from both ends, so shards come back.
    for (std::uint64_t k = 0; k < 40; ++k) {
      const std::uint64_t i = k % 2 ? 39 - k / 2 : k / 2;
      EXPECT_EQ(remote.key(i), local.key(i));
      peak = std::max(peak, folder_bytes(root_ / "cache"));
    }
  }
  EXPECT_LE(peak, limit + largest);
  EXPECT_TRUE(run_epoch(remote, 2, 0) == run_epoch(local, 0, 0));
  EXPECT_LE(folder_bytes(root_ / "cache"), limit);  // once the downloads ended
  // The largest shard alone is too much: its sidecar must fit too.
  const std::string e = error_of([&] {
    TarShards(http(), parse_transform_spec(kTransform),
              cached_in(root_ / "small", largest));
  });
  EXPECT_NE(e.find("smaller than its largest shard with its sidecar (" +
                   std::to_string(largest) + " + 84 bytes)"),
            std::string::npos)
      << e;
}

TEST_F(RemoteShardsTest, LoadersSharingACacheDownloadEachShardOnce) {
  const TarShards a(http(), parse_transform_spec(kTransform), cached_in(root_ / "cache"));
  const TarShards b(http(), parse_transform_spec(kTransform), cached_in(root_ / "cache"));
  // Two processes, as two jobs on a node are (a loader forking its workers while
  // another thread of the same process is inside a download is not supported).
  const pid_t other = ::fork();
  if (other == 0) {
    const TarShards local(root_ / "data", parse_transform_spec(kTransform));
    ::_exit(run_epoch(b, 2, 0) == run_epoch(local, 0, 0) ? 0 : 1);
  }
  ASSERT_GT(other, 0);
  const Epoch from_a = run_epoch(a, 2, 0);
  int status = -1;
  ::waitpid(other, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(from_a.size(), 40u);
  for (const auto& [name, bytes] : shards_) {
    EXPECT_EQ(nginx_->requests("/data/" + name).size(), 1u) << name;
  }
  // Nothing but complete shards is left: no part, no lock file.
  for (const auto& f : std::filesystem::recursive_directory_iterator(root_ / "cache")) {
    if (f.is_regular_file()) EXPECT_NE(f.path().extension(), ".part") << f.path();
  }
}

TEST_F(RemoteShardsTest, AnEpochResumedMidwayOverHttpContinuesTheLocalEpoch) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  const Epoch whole = run_epoch(local, 0, 1);
  // Batches 4 to 9 of epoch 1: the samples at positions 16 to 39 of its order.
  const std::vector<Index> order = make_sampler(40, loader_options(0), 5)->indices(1);
  Epoch want;
  for (std::size_t p = 16; p < order.size(); ++p) want[order[p]] = whole.at(order[p]);
  for (int workers : {0, 2}) {
    EXPECT_TRUE(run_epoch(remote, workers, 1, 4) == want) << workers << " workers";
  }
}

// The shards every sample of `order` reads, in turn.
std::vector<std::size_t> shards_read(const std::vector<Index>& order,
                                     const std::vector<std::uint64_t>& sizes) {
  std::vector<std::size_t> shard_of;
  for (std::size_t s = 0; s < sizes.size(); ++s)
    shard_of.insert(shard_of.end(), sizes[s], s);
  std::vector<std::size_t> out;
  for (Index i : order) out.push_back(shard_of[i]);
  return out;
}

TEST_F(RemoteShardsTest, TheShardOrderReadsEachShardOnceThroughABoundedCache) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  std::vector<std::uint64_t> bytes;  // by shard number (names sort as they number)
  for (const auto& [name, size] : shards_) bytes.push_back(size);
  const std::vector<std::uint64_t> sizes = local.shard_sizes();
  ASSERT_EQ(sizes.size(), bytes.size());
  // A cache that holds the shards of any two neighbouring blocks of 8 samples.
  const std::vector<std::size_t> read = shards_read(
      make_sampler(40, loader_options(0, ShuffleOrder::kShards), 5, sizes)->indices(0),
      sizes);
  std::uint64_t limit = 0;
  for (std::size_t start = 0; start < read.size(); start += 8) {
    std::set<std::size_t> two_blocks(
        read.begin() + static_cast<std::ptrdiff_t>(start),
        read.begin() + static_cast<std::ptrdiff_t>(std::min(read.size(), start + 16)));
    std::uint64_t total = 0;
    for (std::size_t s : two_blocks) total += holding({bytes[s]});
    limit = std::max(limit, total);
  }
  std::uint64_t all = 0;
  for (std::uint64_t b : bytes) all += b;
  ASSERT_LT(limit, all) << "the test's blocks should not cover the whole data set";
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache", limit));
  EXPECT_TRUE(run_epoch(remote, 0, 0, 0, ShuffleOrder::kShards) ==
              run_epoch(local, 0, 0, 0, ShuffleOrder::kShards));
  std::size_t downloads = 0;
  for (const auto& [name, size] : shards_) {
    EXPECT_EQ(nginx_->requests("/data/" + name).size(), 1u) << name;
    downloads += nginx_->requests("/data/" + name).size();
  }
  // The data set's own order through the same cache fetches shards again and again.
  const TarShards scattered(http(), parse_transform_spec(kTransform),
                            cached_in(root_ / "cache2", limit));
  EXPECT_TRUE(run_epoch(scattered, 0, 0) == run_epoch(local, 0, 0));
  std::size_t again = 0;
  for (const auto& [name, size] : shards_)
    again += nginx_->requests("/data/" + name).size();
  EXPECT_GT(again - downloads, shards_.size()) << "numpy order: " << again - downloads;
}

TEST_F(RemoteShardsTest, TheToolsReadAUrlThroughTheCacheTheEnvironmentNames) {
  std::uint64_t largest = 0;
  for (const auto& [name, bytes] : shards_) largest = std::max(largest, bytes);
  const std::string bench = std::string(SEEDLOADER_BENCH) + " --data tar:" + http() +
                            " --transform rrc:24,hflip --batch-size 4 --workers 2" +
                            " --batches 6 --warmup 1 --order shards --json";
  const std::string cache = "SEEDLOADER_CACHE_DIR=" + (root_ / "cache");
  const auto ok = testing_util::run_command(
      cache + " SEEDLOADER_CACHE_LIMIT=" + std::to_string(3 * largest) +
      " SEEDLOADER_CACHE_VERIFY=hash " + bench + " 2>&1");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"samples_per_s\""), std::string::npos) << ok.out;
  EXPECT_GT(folder_bytes(root_ / "cache"), 0u);
  EXPECT_LE(folder_bytes(root_ / "cache"), 4 * largest);
  const auto small =
      testing_util::run_command(cache + " SEEDLOADER_CACHE_LIMIT=1K " + bench + " 2>&1");
  EXPECT_EQ(small.exit_code, 2) << small.out;
  EXPECT_NE(small.out.find("smaller than its largest shard"), std::string::npos)
      << small.out;
  const auto bad = testing_util::run_command(cache + " SEEDLOADER_CACHE_LIMIT=lots " +
                                             bench + " 2>&1");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("SEEDLOADER_CACHE_LIMIT 'lots'"), std::string::npos) << bad.out;
  const auto verify = testing_util::run_command(cache + " SEEDLOADER_CACHE_VERIFY=full " +
                                                bench + " 2>&1");
  EXPECT_EQ(verify.exit_code, 2) << verify.out;
  EXPECT_NE(verify.out.find("SEEDLOADER_CACHE_VERIFY 'full'"), std::string::npos)
      << verify.out;
  const auto ahead = testing_util::run_command(cache + " SEEDLOADER_PREFETCH_SHARDS=-1 " +
                                               bench + " 2>&1");
  EXPECT_EQ(ahead.exit_code, 2) << ahead.out;
  EXPECT_NE(ahead.out.find("SEEDLOADER_PREFETCH_SHARDS '-1'"), std::string::npos)
      << ahead.out;
}

// Complete shards in a cache directory, by name.
std::set<std::string> cached_shards(const std::string& dir) {
  std::set<std::string> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string name = f.path().filename();
    if (f.is_regular_file() && f.path().extension() != ".part")
      out.insert(name.substr(0, name.find('.')) + ".tar");
  }
  return out;
}

// Complete shards in the cache that a reader holds a read lock on (pinned).
std::size_t pinned_files(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file() || f.path().extension() == ".part") continue;
    const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct flock whole {};
    whole.l_type = F_WRLCK;
    whole.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_GETLK, &whole) == 0 && whole.l_type != F_UNLCK) ++n;
    ::close(fd);
  }
  return n;
}

TEST_F(RemoteShardsTest, AnOpenedShardKeepsItsBytesWhenAnotherDownloadEvictsIt) {
  // A limit of one shard: each download evicts the other.
  std::vector<shards::ShardEntry> info = index_shards(root_ / "data/index.json");
  ASSERT_GE(info.size(), 2u);
  const shards::ShardEntry &a = info[0], &b = info[1];
  const remote::ObjectReader reader;
  const remote::ShardCache cache(*remote::ObjectUrl::parse(http() + "index.json"),
                                 root_ / "cache", holding({std::max(a.bytes, b.bytes)}),
                                 reader);
  // Both ways a shard is opened: downloaded by this call, and found cached.
  for (const bool cached_first : {false, true}) {
    if (cached_first) cache.ensure(a);
    const FileHandle file = cache.open(a);
    EXPECT_EQ(file.path(), cache.ensure(a));
    cache.ensure(b);
    EXPECT_FALSE(in_cache(root_ / "cache", a)) << "evicted by b's download";
    EXPECT_EQ(shards::file_xxh64(file.fd(), a.bytes, file.path()), a.xxh64)
        << "cached_first " << cached_first;
  }
}

TEST_F(RemoteShardsTest, ADownloadAheadThatFailsIsCountedAndQuotedByTheReadThatNeeds) {
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  const std::vector<std::uint64_t> sizes = remote.shard_sizes();
  const std::string missing = std::prev(shards_.end())->first;  // the last shard
  std::filesystem::remove(root_ / ("data/" + missing));         // the server lost it
  const std::uint64_t last = remote.size() - sizes.back();
  EXPECT_EQ(remote.prefetch_errors().count, 0u);
  // A worker process announces a read of the last shard, which its thread fails
  // to download ahead; the read itself then fails, quoting that failure.
  const pid_t worker = ::fork();
  if (worker == 0) {
    remote.will_read(std::vector<std::uint64_t>{last});
    int i = 0;
    // Counted, and its message published (another process may count first).
    for (;
         i < 1000 && remote.prefetch_errors().first.find("HTTP 404") == std::string::npos;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (i == 1000) ::_exit(1);
    const std::string e = seedloader::testing::get_error(remote, last);
    const bool quoted = e.find(
                            "1 download(s) ahead failed before; the first: "
                            "downloading shard " +
                            http() + missing + " ahead") != std::string::npos;
    ::_exit(e.find("HTTP 404") == std::string::npos ? 2 : quoted ? 0 : 3);
  }
  ASSERT_GT(worker, 0);
  int status = -1;
  ::waitpid(worker, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The count lives in memory the worker shares with the process that built it.
  const PrefetchErrors ahead = remote.prefetch_errors();
  EXPECT_EQ(ahead.count, 1u);
  EXPECT_NE(ahead.first.find("downloading shard " + http() + missing + " ahead: GET "),
            std::string::npos)
      << ahead.first;
  EXPECT_NE(ahead.first.find("HTTP 404"), std::string::npos) << ahead.first;
}

TEST_F(RemoteShardsTest, EvictionSparesPinnedShardsAndAReadAheadNeverEvictsThem) {
  // Four shards from the index, and a limit that holds any two of them, not three.
  std::vector<shards::ShardEntry> info = index_shards(root_ / "data/index.json");
  ASSERT_GE(info.size(), 4u);
  info.resize(4);
  std::vector<std::uint64_t> sizes;
  for (const auto& i : info) sizes.push_back(i.bytes);
  std::sort(sizes.begin(), sizes.end());
  const std::uint64_t limit = holding({sizes[2], sizes[3]});
  ASSERT_GT(holding({sizes[0], sizes[1], sizes[2]}), limit);
  const remote::ObjectReader reader;
  const remote::ShardCache cache(*remote::ObjectUrl::parse(http() + "index.json"),
                                 root_ / "cache", limit, reader);
  const shards::ShardEntry &a = info[0], &b = info[1], &c = info[2], &d = info[3];
  cache.ensure(a);
  cache.ensure(b);  // a is now the least recently used
  const FileHandle pin_a = cache.pin(a);
  ASSERT_TRUE(pin_a);
  EXPECT_FALSE(cache.pin(d)) << "not cached, so not pinned";
  cache.ensure(c);
  EXPECT_TRUE(in_cache(root_ / "cache", a))
      << "pinned, so spared though least recently used";
  EXPECT_FALSE(in_cache(root_ / "cache", b));
  EXPECT_TRUE(in_cache(root_ / "cache", c));
  // With a and c pinned, a download ahead of the reads is not made...
  const FileHandle pin_c = cache.pin(c);
  EXPECT_EQ(cache.ensure(d, remote::ShardCache::Need::kAhead), "");
  EXPECT_FALSE(in_cache(root_ / "cache", d));
  EXPECT_TRUE(nginx_->requests("/data/" + d.name).empty());
  // ...but a read's own is: it evicts the least recently used pinned shard.
  EXPECT_NE(cache.ensure(d), "");
  EXPECT_FALSE(in_cache(root_ / "cache", a));
  EXPECT_TRUE(in_cache(root_ / "cache", c));
  EXPECT_TRUE(in_cache(root_ / "cache", d));
  EXPECT_LE(folder_bytes(root_ / "cache"), limit);
}

TEST_F(RemoteShardsTest, AWorkerProcessDownloadsTheShardsOfItsNextReadsAhead) {
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  const std::vector<std::uint64_t> sizes = remote.shard_sizes();
  std::vector<std::string> names;
  for (const auto& [name, bytes] : shards_) names.push_back(name);
  // The first sample of the last shard, then of the one before it.
  const std::uint64_t last = remote.size() - sizes.back();
  const std::vector<std::uint64_t> next{last, last - sizes[sizes.size() - 2]};
  const std::set<std::string> want{names.back(), names[names.size() - 2]};
  // The process that built the data set (which may fork workers) starts nothing.
  remote.will_read(next);
  // A worker process does, without reading a sample.
  const pid_t worker = ::fork();
  if (worker == 0) {
    remote.will_read(next);
    int i = 0;
    for (; i < 1000 && cached_shards(root_ / "cache") != want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (i == 1000) ::_exit(1);
    // Announced again, now cached: pinned against eviction until the next call.
    remote.will_read(next);
    if (pinned_files(root_ / "cache") != want.size()) ::_exit(2);
    remote.will_read({});
    ::_exit(pinned_files(root_ / "cache") == 0 ? 0 : 3);
  }
  ASSERT_GT(worker, 0);
  int status = -1;
  ::waitpid(worker, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(cached_shards(root_ / "cache"), want);
  for (const std::string& name : want)
    EXPECT_EQ(nginx_->requests("/data/" + name).size(), 1u) << name;
  // And a loader's workers read them from the cache with the rest.
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  EXPECT_TRUE(run_epoch(remote, 2, 0) == run_epoch(local, 0, 0));
  for (const std::string& name : want)
    EXPECT_EQ(nginx_->requests("/data/" + name).size(), 1u) << name;
}

TEST_F(RemoteShardsTest, ACutOffDownloadContinuesWithARangeRequest) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const auto [name, bytes] = *shards_.begin();  // holds sample 0
  {
    const TarShards remote(http(), parse_transform_spec(kTransform),
                           cached_in(root_ / "cache"));
    EXPECT_EQ(remote.key(0), local.key(0));  // downloads it
  }
  // Replace the complete file by its first half, named as a part, as a download
  // killed midway leaves it.
  const std::vector<std::string> files = complete_files(root_ / "cache");
  ASSERT_EQ(files.size(), 1u);
  const std::string complete = files[0];
  std::filesystem::remove(complete + ".stat");  // as a killed download leaves none
  std::vector<char> half(bytes / 2);
  std::ifstream(complete, std::ios::binary)
      .read(half.data(), static_cast<std::streamsize>(half.size()));
  std::filesystem::remove(complete);
  std::ofstream(complete + "." + std::to_string(bytes) + ".part", std::ios::binary)
      .write(half.data(), static_cast<std::streamsize>(half.size()));

  const TarShards again(http(), parse_transform_spec(kTransform),
                        cached_in(root_ / "cache"));
  EXPECT_TRUE(run_epoch(again, 0, 0) == run_epoch(local, 0, 0));
  EXPECT_EQ(nginx_->requests("/data/" + name, 2),
            (std::vector<std::string>{"200 " + std::to_string(bytes),
                                      "206 " + std::to_string(bytes - half.size())}));
}

TEST_F(RemoteShardsTest, AShardChangedAfterPackingFailsAtOnceNamingItsUrl) {
  const auto [name, bytes] = *shards_.rbegin();
  {
    std::fstream f(root_ / ("data/" + name),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(600);
    f.put('\x7f');  // the same size, other bytes
  }
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  const std::string e = error_of([&] { run_epoch(remote, 0, 0); });
  EXPECT_NE(e.find(http() + name), std::string::npos) << e;
  EXPECT_NE(e.find("differs from the index"), std::string::npos) << e;
  EXPECT_EQ(nginx_->requests("/data/" + name).size(), 1u);  // no retry
}

TEST_F(RemoteShardsTest, AShardThatVanishesMidEpochIsA404NamingIt) {
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  const auto [name, bytes] = *shards_.rbegin();
  std::filesystem::remove(root_ / ("data/" + name));
  for (int workers : {0, 2}) {
    const std::string e = error_of([&] { run_epoch(remote, workers, 0); });
    EXPECT_NE(e.find("GET " + http() + name + ": HTTP 404 (1 attempt)"),
              std::string::npos)
        << workers << " workers: " << e;
  }
  // Nothing of it reached the cache: no complete file, no byte in a part. (A
  // worker's prefetch thread stopped with its worker between creating its part
  // and the 404 leaves an empty part: a dead download, which the next one of
  // that shard reuses and an eviction deletes.)
  for (const auto& f : std::filesystem::recursive_directory_iterator(root_ / "cache")) {
    if (f.path().filename().string().rfind(name, 0) != 0) continue;
    EXPECT_EQ(f.path().extension(), ".part") << f.path();
    EXPECT_EQ(f.file_size(), 0u) << f.path();
  }
}

TEST_F(RemoteShardsTest, AFolderWithoutAnIndexNamesThePackCommand) {
  std::filesystem::remove(root_ / "data/index.json");
  const std::string e = error_of([&] {
    TarShards(http(), parse_transform_spec(kTransform), cached_in(root_ / "cache"));
  });
  EXPECT_NE(e.find(http() + "index.json"), std::string::npos) << e;
  EXPECT_NE(e.find("seedloader-pack"), std::string::npos) << e;
}

TEST_F(RemoteShardsTest, APasswordInTheUrlIsSentButNeverShown) {
  const std::string url = "http://reader:s3%2Fcr3t@" + nginx_->url().substr(7) + "/data/";
  const TarShards remote(url, parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  EXPECT_EQ(remote.describe(), "TarShards(" + http() + ")");
  // nginx logs a request after answering it: wait for the line, then read it whole.
  EXPECT_EQ(nginx_->requests("/data/index.json").size(), 1u);
  std::ifstream log(root_ / "nginx/access.log");  // the user went with the request
  const std::string logged((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(logged.find("GET /data/index.json 200"), std::string::npos) << logged;
  EXPECT_NE(logged.find(" reader\n"), std::string::npos) << logged;
  const std::string e = error_of([&] {
    TarShards(url + "missing/", parse_transform_spec(kTransform), cached_in(root_ / "c"));
  });
  EXPECT_NE(e.find("seedloader-pack"), std::string::npos) << e;
  EXPECT_EQ(e.find("cr3t"), std::string::npos) << e;
  EXPECT_EQ(e.find("reader"), std::string::npos) << e;
}

// tests/remote/fault_proxy.py in front of nginx, answering requests with `faults`
// in turn.
std::unique_ptr<testing_util::ServerProcess> fault_proxy(const Nginx& nginx,
                                                         const std::string& faults,
                                                         const std::string& dir) {
  const int port = testing_util::free_port();
  return std::make_unique<testing_util::ServerProcess>(
      std::vector<std::string>{"/usr/bin/python3",
                               SEEDLOADER_SOURCE_DIR "/tests/remote/fault_proxy.py",
                               std::to_string(port), nginx.url().substr(17), faults},
      std::vector<std::string>{}, port, dir + "/proxy.out");
}

TEST_F(RemoteShardsTest, FaultsAreRetriedAndTheBatchesStayExact) {
  const auto proxy =
      fault_proxy(*nginx_, "503,ok,truncate,drop,ok,429,truncate,stall,ok", root_.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(proxy->port()) + "/data/";
  TarShardsOptions options = cached_in(root_ / "cache");
  options.stall_timeout_s = 1;
  options.max_attempts = 5;
  const TarShards remote(url, parse_transform_spec(kTransform), options);
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  EXPECT_TRUE(run_epoch(remote, 2, 0) == run_epoch(local, 0, 0));
  EXPECT_TRUE(run_epoch(remote, 0, 1) == run_epoch(local, 0, 1));
  // Truncated bodies were continued from their last byte, not fetched again.
  int ranges = 0;
  for (const auto& [name, bytes] : shards_) {
    for (const std::string& r : nginx_->requests("/data/" + name))
      ranges += r[0] == '2' && r[2] == '6';
  }
  EXPECT_GE(ranges, 1);
}

TEST_F(RemoteShardsTest, AServerThatKeepsFailingIsNamedWithItsStatus) {
  const auto proxy = fault_proxy(*nginx_, "503", root_.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(proxy->port()) + "/data/";
  const std::string e = error_of([&] {
    TarShards(url, parse_transform_spec(kTransform), cached_in(root_ / "cache"));
  });
  EXPECT_NE(e.find("GET " + url + "index.json: HTTP 503 (3 attempts)"), std::string::npos)
      << e;
}

TEST_F(RemoteShardsTest, ConcurrentDownloadsLeaveTheCacheWithinItsLimit) {
  // Every answer 300 ms late: both downloads of a round are admitted (their
  // space counted) before either ends, so only a trim after each keeps the bound.
  const auto proxy = fault_proxy(*nginx_, "delay300", root_.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(proxy->port()) + "/data/";
  const std::vector<shards::ShardEntry> info = index_shards(root_ / "data/index.json");
  ASSERT_GE(info.size(), 4u);
  std::uint64_t largest = 0;
  for (const auto& i : info) largest = std::max(largest, i.bytes);
  const std::uint64_t limit = holding({largest});  // the cache holds one shard
  const remote::ObjectReader reader;
  const remote::ShardCache cache(*remote::ObjectUrl::parse(url + "index.json"),
                                 root_ / "cache", limit, reader);
  for (std::size_t round = 0; round < 2; ++round) {
    const shards::ShardEntry &a = info[2 * round], &b = info[2 * round + 1];
    std::string got_a, got_b;
    std::jthread other([&] { got_a = cache.ensure(a); });
    got_b = cache.ensure(b);
    other.join();
    // Each read got its shard; once both ended, one of them is left.
    EXPECT_NE(got_a, "");
    EXPECT_NE(got_b, "");
    EXPECT_LE(folder_bytes(root_ / "cache"), limit) << "round " << round;
    EXPECT_EQ(complete_files(root_ / "cache").size(), 1u) << "round " << round;
  }
  // Every sidecar left belongs to a complete shard.
  for (const auto& f : std::filesystem::recursive_directory_iterator(root_ / "cache")) {
    if (is_sidecar(f.path()))
      EXPECT_TRUE(std::filesystem::exists(f.path().parent_path() / f.path().stem()))
          << f.path();
  }
}

TEST_F(RemoteShardsTest, SidecarsCountAgainstTheLimit) {
  // A limit of exactly two shards' bytes holds one of them with its sidecar,
  // not both with theirs.
  const std::vector<shards::ShardEntry> info = index_shards(root_ / "data/index.json");
  const shards::ShardEntry &a = info[0], &b = info[1];
  const std::uint64_t limit = a.bytes + b.bytes;
  const remote::ObjectReader reader;
  const remote::ShardCache cache(*remote::ObjectUrl::parse(http() + "index.json"),
                                 root_ / "cache", limit, reader);
  EXPECT_NE(cache.ensure(a), "");
  EXPECT_NE(cache.ensure(b), "");
  EXPECT_FALSE(in_cache(root_ / "cache", a));
  EXPECT_TRUE(in_cache(root_ / "cache", b));
  EXPECT_LE(folder_bytes(root_ / "cache"), limit);
  // A sidecar is never more than the room counted for it.
  for (const auto& f : std::filesystem::recursive_directory_iterator(root_ / "cache")) {
    if (is_sidecar(f.path())) EXPECT_LE(f.file_size(), remote::ShardCache::kSidecarBytes);
  }
}

TEST_F(RemoteShardsTest, ADownloadAheadThatNoLongerFitsIsDropped) {
  // a is downloaded ahead through a proxy that answers 1 s late; meanwhile b, a
  // read's own, comes straight from nginx, into the same cache directory (the
  // folder of another data set URL: the limit is the directory's), and is pinned.
  const auto proxy = fault_proxy(*nginx_, "delay1000", root_.path());
  const std::string slow = "http://127.0.0.1:" + std::to_string(proxy->port()) + "/data/";
  const std::vector<shards::ShardEntry> info = index_shards(root_ / "data/index.json");
  const shards::ShardEntry &a = info[0], &b = info[1];
  const std::uint64_t limit = holding({std::max(a.bytes, b.bytes)});
  const remote::ObjectReader reader;
  const remote::ShardCache cache_a(*remote::ObjectUrl::parse(slow + "index.json"),
                                   root_ / "cache", limit, reader);
  const remote::ShardCache cache_b(*remote::ObjectUrl::parse(http() + "index.json"),
                                   root_ / "cache", limit, reader);
  std::string got_a = "(not returned)";
  // (A jthread: joined however the test ends.)
  std::jthread ahead(
      [&] { got_a = cache_a.ensure(a, remote::ShardCache::Need::kAhead); });
  for (int i = 0; i < 500 && !cache_a.downloading(a); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(cache_a.downloading(a));
  EXPECT_NE(cache_b.ensure(b), "");  // admitted though a's part fills the cache
  const FileHandle pin_b = cache_b.pin(b);
  ASSERT_TRUE(pin_b);
  ahead.join();
  // a was speculative: deleted, since only deleting the pinned b would make room.
  EXPECT_EQ(got_a, "");
  EXPECT_FALSE(in_cache(root_ / "cache", a));
  EXPECT_TRUE(in_cache(root_ / "cache", b));
  EXPECT_LE(folder_bytes(root_ / "cache"), limit);
}

TEST_F(RemoteShardsTest, TwoWorkersKeepTheCacheWithinALimitOfOneShard) {
  std::uint64_t largest = 0;
  for (const auto& [name, bytes] : shards_) largest = std::max(largest, bytes);
  const auto proxy = fault_proxy(*nginx_, "delay50", root_.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(proxy->port()) + "/data/";
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote(url, parse_transform_spec(kTransform),
                         cached_in(root_ / "cache", holding({largest})));
  EXPECT_TRUE(run_epoch(remote, 2, 0) == run_epoch(local, 0, 0));
  EXPECT_LE(folder_bytes(root_ / "cache"), holding({largest}));
}

// Flips the digit of the first label member ('0' <-> '1') of the tar file at
// `path` in place: the same size, other bytes, another label for one sample.
void flip_first_label(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  char header[512];
  for (std::uint64_t at = 0; f.seekg(static_cast<std::streamoff>(at)) &&
                             f.read(header, sizeof header) && header[0] != '\0';) {
    const std::string name(header, ::strnlen(header, 100));
    const std::uint64_t size =
        std::strtoull(std::string(header + 124, 12).c_str(), nullptr, 8);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".cls") == 0) {
      char digit = 0;
      f.seekg(static_cast<std::streamoff>(at + 512));
      f.get(digit);
      ASSERT_TRUE(digit == '0' || digit == '1') << path << ": " << name;
      f.seekp(static_cast<std::streamoff>(at + 512));
      f.put(digit == '0' ? '1' : '0');
      return;
    }
    at += 512 + (size + 511) / 512 * 512;
  }
  FAIL() << path << ": no label member";
}

// The shard's name ("000003.tar") of a complete file in the cache.
std::string shard_name(const std::string& complete) {
  const std::string file = std::filesystem::path(complete).filename();
  return file.substr(0, file.rfind('.'));
}

// A later modification time than anything written before the call, whatever the
// file system's clock granularity (a jiffy of the kernel's coarse clock at most).
void next_tick() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

// Reads epoch 0 of the pack at `url` through a cache in `cache`, expecting
// `want`, and returns the path of the first shard it cached.
std::string cached_by_an_epoch(const std::string& url, const std::string& cache,
                               const Epoch& want) {
  const TarShards remote(url, parse_transform_spec(kTransform), cached_in(cache));
  EXPECT_TRUE(run_epoch(remote, 0, 0) == want);
  return complete_files(cache).front();
}

TEST_F(RemoteShardsTest, ACachedShardRewrittenAtTheSameSizeIsDownloadedAgain) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote(http(), parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));  // cache_verify "stat"
  const Epoch want = run_epoch(local, 0, 0);
  ASSERT_TRUE(run_epoch(remote, 0, 0) == want);
  const std::string changed = complete_files(root_ / "cache").front();
  const std::string name = shard_name(changed);
  next_tick();
  flip_first_label(changed);
  // The data set that checked it before sees the change, and downloads it again.
  EXPECT_TRUE(run_epoch(remote, 0, 0) == want);
  EXPECT_EQ(nginx_->requests("/data/" + name, 2).size(), 2u);
  // So does a new one, in its worker processes.
  next_tick();
  flip_first_label(changed);
  const TarShards fresh(http(), parse_transform_spec(kTransform),
                        cached_in(root_ / "cache"));
  EXPECT_TRUE(run_epoch(fresh, 2, 1) == run_epoch(local, 0, 1));
  EXPECT_EQ(nginx_->requests("/data/" + name, 3).size(), 3u);
}

TEST_F(RemoteShardsTest, CacheVerifyHashFindsAChangeThatKeptTheModificationTime) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const Epoch want = run_epoch(local, 0, 0);
  const std::string changed = cached_by_an_epoch(http(), root_ / "cache", want);
  const std::string name = shard_name(changed);
  struct stat before {};
  ASSERT_EQ(::stat(changed.c_str(), &before), 0);
  next_tick();
  flip_first_label(changed);
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, changed.c_str(), times, 0), 0);
  // "stat" cannot see it: the same inode, size and modification time.
  const TarShards by_stat(http(), parse_transform_spec(kTransform),
                          cached_in(root_ / "cache"));
  EXPECT_FALSE(run_epoch(by_stat, 0, 0) == want);
  // "hash" re-hashes each shard a process first opens, and fetches this one again.
  TarShardsOptions options = cached_in(root_ / "cache");
  options.cache_verify = CacheVerify::kHash;
  const TarShards by_hash(http(), parse_transform_spec(kTransform), options);
  EXPECT_TRUE(run_epoch(by_hash, 2, 0) == want);
  EXPECT_EQ(nginx_->requests("/data/" + name, 2).size(), 2u);
}

TEST_F(RemoteShardsTest, CacheVerifyNoneServesAChangedShardAsItIs) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const Epoch want = run_epoch(local, 0, 0);
  const std::string changed = cached_by_an_epoch(http(), root_ / "cache", want);
  next_tick();
  flip_first_label(changed);
  TarShardsOptions options = cached_in(root_ / "cache");
  options.cache_verify = CacheVerify::kNone;
  const TarShards trusting(http(), parse_transform_spec(kTransform), options);
  EXPECT_FALSE(run_epoch(trusting, 0, 0) == want);
  EXPECT_EQ(nginx_->requests("/data/" + shard_name(changed)).size(), 1u);
  EXPECT_EQ(parse_cache_verify("none"), CacheVerify::kNone);
  EXPECT_EQ(parse_cache_verify("stat"), CacheVerify::kStat);
  EXPECT_EQ(parse_cache_verify("hash"), CacheVerify::kHash);
  EXPECT_FALSE(parse_cache_verify("full"));
}

TEST(RemoteFailureTest, AServerThatIsDownIsRetriedThenNamed) {
  TempDir dir;
  const std::string url =
      "http://127.0.0.1:" + std::to_string(testing_util::free_port()) + "/data/";
  const std::string e = error_of([&] {
    TarShards(url, parse_transform_spec(kTransform), cached_in(dir / "cache"));
  });
  EXPECT_NE(e.find("GET " + url + "index.json"), std::string::npos) << e;
  EXPECT_NE(e.find("curl error 7"), std::string::npos) << e;
  EXPECT_NE(e.find("(3 attempts)"), std::string::npos) << e;
}

// rclone serve s3 of root_, whose folder "data" is the bucket.
class S3ShardsTest : public RemoteShardsTest {
 protected:
  void SetUp() override {
    const std::string missing =
        testing_util::server_missing(testing_util::rclone_path(), "rclone");
    if (!missing.empty()) GTEST_SKIP() << missing;
    RemoteShardsTest::SetUp();
    s3_ = std::make_unique<RcloneS3>(root_.path(), root_ / "rclone", "AKIDTEST",
                                     "s3cr3t-key");
    // TarShards and its workers read the process's variables; AWS_ENDPOINT_URL_S3
    // among them is cleared, as it would win over the local server.
    aws_ = std::make_unique<testing_util::ProcessAws>(root_ / "home");
    aws_->set("AWS_ENDPOINT_URL", s3_->endpoint());
    aws_->set("AWS_REGION", "us-east-1");
    aws_->set("AWS_ACCESS_KEY_ID", "AKIDTEST");
    aws_->set("AWS_SECRET_ACCESS_KEY", "s3cr3t-key");
  }
  void TearDown() override { aws_.reset(); }
  std::unique_ptr<RcloneS3> s3_;
  std::unique_ptr<testing_util::ProcessAws> aws_;
};

TEST_F(S3ShardsTest, S3BatchesEqualTheLocalFolders) {
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote("s3://data/", parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  ASSERT_EQ(remote.size(), 40u);
  for (std::uint64_t epoch : {0, 1}) {
    const Epoch want = run_epoch(local, 0, epoch);
    for (int workers : {0, 2}) {
      EXPECT_TRUE(run_epoch(remote, workers, epoch) == want)
          << "epoch " << epoch << ", " << workers << " workers";
    }
  }
}

TEST_F(S3ShardsTest, WrongCredentialsAreA403NamingTheUrlNotTheSecret) {
  aws_->set("AWS_SECRET_ACCESS_KEY", "wrong-secret");
  const std::string e = error_of([&] {
    TarShards("s3://data", parse_transform_spec(kTransform), cached_in(root_ / "cache"));
  });
  EXPECT_NE(e.find("s3://data/index.json"), std::string::npos) << e;
  EXPECT_NE(e.find("HTTP 403"), std::string::npos) << e;
  EXPECT_NE(e.find("(1 attempt)"), std::string::npos) << e;
  EXPECT_EQ(e.find("wrong-secret"), std::string::npos) << e;
}

}  // namespace
}  // namespace seedloader
