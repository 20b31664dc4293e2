// ShuffleOrder::kTorch against the installed PyTorch: for many (N, world size,
// rank, seed, epoch, drop_last), N up to 10^6, the shard equals
// list(torch.utils.data.DistributedSampler(range(N), num_replicas, rank,
// shuffle=True, seed, drop_last)) after set_epoch(epoch), index for index.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "seedloader/distributed_sampler.h"
#include "seedloader/random.h"
#include "seedloader/sampler.h"
#include "seedloader/seed_sequence.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader {
namespace {

struct Case {
  std::uint64_t n, world, rank, seed, epoch;
  bool drop_last;
};

// An order-sensitive digest of a list, computed alike in the Python below.
std::uint64_t digest(const std::vector<Index>& v) {
  std::uint64_t h = v.size();
  for (std::size_t i = 0; i < v.size(); ++i) h = h * 1000003u + v[i] * (i + 1);
  return h;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  Rng pick(SeedSequence(2024));
  auto below = [&](std::uint64_t k) { return bounded(pick, k); };
  for (int i = 0; i < 500; ++i) {
    Case c;
    c.world = 1 + below(9);
    c.rank = below(c.world);
    c.drop_last = below(2) == 1;
    c.n = (c.drop_last ? c.world : 1) + below(300);
    // Seeds above 2^32 too: torch keeps their low 32 bits.
    c.seed = i % 3 == 0 ? pick() : below(1000);
    c.epoch = below(1000);
    out.push_back(c);
  }
  out.push_back({1000000, 1, 0, 0, 0, false});
  out.push_back({1000000, 8, 3, 1234, 7, true});
  out.push_back({999983, 3, 2, 5000000000ull, 2, false});
  return out;
}

TEST(TorchOrderTest, ShardsEqualPyTorchsDistributedSamplerIndexForIndex) {
  SL_REQUIRE_PYTHON_MODULE("torch");
  const std::vector<Case> all = cases();
  const std::string dir = testing_util::process_temp_dir();
  {
    std::ofstream f(dir + "torch_order_cases.txt");
    for (const Case& c : all)
      f << c.n << " " << c.world << " " << c.rank << " " << c.seed << " " << c.epoch
        << " " << c.drop_last << "\n";
  }
  const std::string script =
      "import sys\n"
      "from torch.utils.data import DistributedSampler\n"
      "M = (1 << 64) - 1\n"
      "for line in open(sys.argv[1]):\n"
      "    n, w, r, seed, epoch, drop = map(int, line.split())\n"
      "    s = DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=True,\n"
      "                           seed=seed, drop_last=bool(drop))\n"
      "    s.set_epoch(epoch)\n"
      "    v = list(s)\n"
      "    h = len(v)\n"
      "    for i, x in enumerate(v):\n"
      "        h = (h * 1000003 + x * (i + 1)) & M\n"
      "    print(h)\n";
  {
    std::ofstream f(dir + "torch_order.py");
    f << script;
  }
  const auto r = testing_util::run_command("/usr/bin/python3 " + dir + "torch_order.py " +
                                           dir + "torch_order_cases.txt");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream in(r.out);
  std::size_t checked = 0;
  for (const Case& c : all) {
    std::uint64_t expected = 0;
    ASSERT_TRUE(in >> expected) << "torch printed " << checked << " digests";
    DistributedSampler s(c.n, {.world_size = c.world,
                               .rank = c.rank,
                               .shuffle = true,
                               .seed = c.seed,
                               .drop_last = c.drop_last,
                               .order = ShuffleOrder::kTorch});
    EXPECT_EQ(digest(s.indices(c.epoch)), expected)
        << "N " << c.n << " world " << c.world << " rank " << c.rank << " seed " << c.seed
        << " epoch " << c.epoch << " drop_last " << c.drop_last;
    ++checked;
  }
  EXPECT_EQ(checked, all.size());
  std::cout << "[ torch order ] " << checked << " shards equal PyTorch's\n";
}

// Without torch: the shard PyTorch prints for N=10, 3 ranks, rank 1, seed 0
// ([1, 3, 8, 4]), and world size 1 is torch.randperm itself.
TEST(TorchOrderTest, KnownPyTorchShardsAndRandperm) {
  DistributedSampler s(10, {.world_size = 3,
                            .rank = 1,
                            .shuffle = true,
                            .seed = 0,
                            .order = ShuffleOrder::kTorch});
  EXPECT_EQ(s.indices(0), (std::vector<Index>{1, 3, 8, 4}));
  // torch.randperm(10, generator=torch.Generator().manual_seed(5))
  const std::vector<Index> five{1, 4, 9, 6, 3, 5, 0, 2, 8, 7};
  EXPECT_EQ(torch_randperm(10, 5), five);
  EXPECT_EQ(torch_randperm(10, (1ull << 40) + 5), five);  // low 32 bits only
  EXPECT_EQ(RandomSampler(10, 2, ShuffleOrder::kTorch).indices(3), five);  // seed + epoch
  EXPECT_NE(RandomSampler(10, 2).indices(3), five);
}

}  // namespace
}  // namespace seedloader
