#include "seedloader/derive.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "seedloader/random.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader {
namespace {

TEST(DeriveTest, KeysCarryPurposeTag) {
  EXPECT_EQ(shuffle_key(3), (std::vector<std::uint64_t>{0, 3}));
  EXPECT_EQ(worker_key(3, 1, 2), (std::vector<std::uint64_t>{1, 3, 1, 2}));
  EXPECT_EQ(sample_key(3, 99), (std::vector<std::uint64_t>{2, 3, 99}));
}

TEST(DeriveTest, PurposesNeverCollide) {
  // (epoch 0, index 0) as a sample key and (0, 0, ...) as worker/shuffle keys.
  EXPECT_NE(shuffle_stream(5, 0).fingerprint(), sample_stream(5, 0, 0).fingerprint());
  EXPECT_NE(worker_stream(5, 0, 0, 0).fingerprint(),
            sample_stream(5, 0, 0).fingerprint());
}

TEST(DeriveTest, MillionWorkerKeysGiveMillionDistinctFirstOutputs) {
  std::unordered_set<std::uint64_t> seen;
  seen.reserve(1 << 21);
  // 100 epochs x 100 ranks x 100 workers.
  for (std::uint64_t epoch = 0; epoch < 100; ++epoch) {
    for (std::uint64_t rank = 0; rank < 100; ++rank) {
      for (std::uint64_t worker = 0; worker < 100; ++worker) {
        seen.insert(worker_stream(2024, epoch, rank, worker).fingerprint());
      }
    }
  }
  EXPECT_EQ(seen.size(), 1000000u);
}

TEST(DeriveTest, DrawnBaseSeedsDiffer) {
  EXPECT_NE(draw_base_seed("derive_test"), draw_base_seed("derive_test"));
}

std::string capture(const std::string& command) {
  return testing_util::run_command(command).out;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

TEST(DeriveTest, MatchesNumpyForRandomCombinations) {
  SL_REQUIRE_PYTHON_MODULE("numpy");
  // 300 combinations drawn from a fixed stream; numpy prints two outputs of each.
  Rng pick(SeedSequence(31337));
  std::ostringstream script;
  std::vector<std::vector<std::uint64_t>> keys;
  std::vector<std::uint64_t> seeds;
  script << "import numpy as np\n";
  for (int i = 0; i < 300; ++i) {
    std::uint64_t seed = (i % 3 == 0) ? bounded(pick, 100) : pick.next_u64() >> 1;
    std::uint64_t epoch = bounded(pick, 1000);
    std::vector<std::uint64_t> key;
    switch (i % 3) {
      case 0:
        key = shuffle_key(epoch);
        break;
      case 1:
        key = worker_key(epoch, bounded(pick, 64), bounded(pick, 32));
        break;
      default:
        key = sample_key(epoch, pick.next_u64() >> 20);
        break;
    }
    seeds.push_back(seed);
    keys.push_back(key);
    script << "b=np.random.PCG64(np.random.SeedSequence(" << seed << ",spawn_key=(";
    for (std::uint64_t k : key) script << k << ",";
    script << ")));print(' '.join('0x%016x'%int(x) for x in b.random_raw(2)))\n";
  }
  std::string path = testing_util::process_temp_dir() + "derive_numpy_check.py";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(script.str().c_str(), f);
  std::fclose(f);
  std::istringstream numpy_out(capture("/usr/bin/python3 " + path));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::string a, b;
    ASSERT_TRUE(numpy_out >> a >> b) << "numpy printed too few lines";
    Rng rng = stream_for_key(seeds[i], keys[i]);
    EXPECT_EQ(hex(rng.next_u64()), a) << "combination " << i;
    EXPECT_EQ(hex(rng.next_u64()), b) << "combination " << i;
  }
}

TEST(DeriveTest, CliDeriveMatchesNumpy) {
  SL_REQUIRE_PYTHON_MODULE("numpy");
  const std::string cli = capture(std::string(SEEDLOADER_SEED_AUDIT) +
                                  " derive --seed 99 --purpose worker --epoch 4 --rank 3"
                                  " --worker 2 --count 3 --json");
  const std::string numpy = capture(
      "/usr/bin/python3 -c \"import numpy as np, json;"
      "ss=np.random.SeedSequence(99,spawn_key=(1,4,3,2));"
      "st=['0x%016x'%int(x) for x in ss.generate_state(4,np.uint64)];"
      "out=['0x%016x'%int(x) for x in np.random.PCG64(ss).random_raw(3)];"
      "print(json.dumps({'spawn_key':[1,4,3,2],'state':st,'outputs':out}))\"");
  EXPECT_EQ(nlohmann::json::parse(cli), nlohmann::json::parse(numpy));
}

}  // namespace
}  // namespace seedloader
