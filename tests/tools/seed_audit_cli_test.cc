// seed-audit as a user runs it: exit codes, --help, JSON output, and `shard`
// against PyTorch's DistributedSampler.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "seedloader/distributed_sampler.h"
#include "seedloader/ledger.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader {
namespace {

using testing_util::run_command;

std::string audit(const std::string& args) {
  return std::string(SEEDLOADER_SEED_AUDIT) + " " + args + " 2>&1";
}

TEST(SeedAuditCliTest, HelpOnEverySubcommandExitsZero) {
  for (const char* sub : {"", "derive ", "shard ", "order "}) {
    auto r = run_command(audit(std::string(sub) + "--help"));
    EXPECT_EQ(r.exit_code, 0) << sub << r.out;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

TEST(SeedAuditCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(run_command(audit("")).exit_code, 2);
  EXPECT_EQ(run_command(audit("derive")).exit_code, 2);  // --seed missing
  EXPECT_EQ(run_command(audit("derive --seed 1 --purpose bogus")).exit_code, 2);
  EXPECT_EQ(run_command(audit("frobnicate")).exit_code, 2);
  auto r = run_command(audit("shard --size 10 --world-size 2 --rank 2"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("rank 2 is not below world_size 2"), std::string::npos) << r.out;
}

// Before, strtoull wrapped "-1" to 2^64 - 1 and saturated 2^64 to it, so both
// ran as a different seed (or epoch) than the one typed.
TEST(SeedAuditCliTest, NegativeOrOverflowingIntegersExitTwoNamingTheOption) {
  const std::pair<const char*, const char*> cases[] = {
      {"--seed", "derive --seed -1"},
      {"--seed", "derive --seed 18446744073709551616"},
      {"--epoch", "derive --seed 1 --epoch -1"},
      {"--rank", "derive --seed 1 --rank -2"},
      {"--index", "derive --seed 1 --purpose sample --index 99999999999999999999"},
      {"--seed", "shard --size 10 --world-size 2 --rank 0 --shuffle --seed -1"},
      {"--epoch", "shard --size 10 --world-size 2 --rank 0 --epoch -1"},
      {"--seed", "run --data synthetic:8 --workers 0 --epochs 1 --seed -1"},
      {"--epochs", "run --data synthetic:8 --workers 0 --epochs 18446744073709551616"},
  };
  for (const auto& [option, args] : cases) {
    auto r = run_command(audit(args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(option), std::string::npos) << args << "\n" << r.out;
  }
  EXPECT_EQ(run_command(audit("derive --seed 18446744073709551615")).exit_code, 0);
}

TEST(SeedAuditCliTest, DeriveJsonHasKeyStateAndOutputs) {
  auto r =
      run_command(audit("derive --seed 42 --purpose sample --epoch 1 --index 7 "
                        "--count 2 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spawn_key"], (nlohmann::json{2, 1, 7}));
  EXPECT_EQ(j["state"].size(), 4u);
  EXPECT_EQ(j["outputs"].size(), 2u);
}

TEST(SeedAuditCliTest, ShardJsonEqualsLibrary) {
  auto r =
      run_command(audit("shard --size 103 --world-size 4 --rank 3 --epoch 2 "
                        "--seed 5 --shuffle --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  DistributedSampler s(103, {.world_size = 4, .rank = 3, .shuffle = true, .seed = 5});
  EXPECT_EQ(nlohmann::json::parse(r.out)["indices"].get<std::vector<Index>>(),
            s.indices(2));
}

// `order` prints the ledger: one JSON object per sample, the library's entries
// (tests/loader/ledger_test.cc holds those against real loaders).
TEST(SeedAuditCliTest, OrderJsonIsTheLedgerOfTheDataSpec) {
  auto r = run_command(audit(
      "order --data synthetic:50 --seed 3 --batch-size 4 --world-size 2 --workers 3 "
      "--partition elastic --seeding sample --shuffle --steps 2:5 --json -"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  LedgerQuery q;
  q.options.batch_size = 4;
  q.options.world_size = 2;
  q.options.num_workers = 3;
  q.options.partition = Partition::kElastic;
  q.options.seeding = SeedScope::kSample;
  q.options.shuffle = true;
  q.dataset_size = 50;
  q.seed = 3;
  q.first_step = 2;
  q.end_step = 5;
  const std::vector<LedgerEntry> want = ledger(q);
  std::istringstream lines(r.out);
  std::string line;
  std::size_t i = 0;
  for (; std::getline(lines, line); ++i) {
    ASSERT_LT(i, want.size()) << line;
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["epoch"], 0);
    EXPECT_EQ(j["step"], want[i].step);
    EXPECT_EQ(j["rank"], want[i].rank);
    EXPECT_EQ(j["worker"], want[i].worker);
    EXPECT_EQ(j["slot"], want[i].slot);
    EXPECT_EQ(j["index"], want[i].index);
    EXPECT_EQ(j["stream"].get<std::vector<std::uint64_t>>(), want[i].stream);
    EXPECT_EQ(j["fingerprint"], *want[i].fingerprint);
  }
  EXPECT_EQ(i, want.size());
  EXPECT_EQ(i, 3u * 2 * 4);  // 3 steps x 2 ranks x 4 samples
}

TEST(SeedAuditCliTest, OrderTextNamesTheConfigurationAndEveryColumn) {
  auto r = run_command(
      audit("order --size 20 --seed 7 --batch-size 3 --world-size 2 --step 1"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(
      r.out.find("20 samples, seed 7, batch 3 x 2 ranks (strided), 2 workers, epoch 0"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("step   rank worker   slot        index  stream"),
            std::string::npos);
  EXPECT_NE(r.out.find("(1, 0, 0, 1)"), std::string::npos) << r.out;  // worker 1's stream
}

TEST(SeedAuditCliTest, OrderMarksTheStepsARunDeclaredSkipped) {
  // 5 steps an epoch: global steps 6 and 7 are steps 1 and 2 of epoch 1.
  auto r = run_command(audit(
      "order --size 20 --seed 7 --batch-size 4 --epoch 1 --steps 0:5 --skip-steps 6:8 "
      "--json -"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::set<std::uint64_t> skipped, all;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    all.insert(j["step"].get<std::uint64_t>());
    if (j["skipped"].get<bool>()) skipped.insert(j["step"].get<std::uint64_t>());
  }
  EXPECT_EQ(all, (std::set<std::uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(skipped, (std::set<std::uint64_t>{1, 2}));
  r = run_command(
      audit("order --size 20 --seed 7 --batch-size 4 --step 0 --skip-steps 3"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--skip-steps 3: expected A:B"), std::string::npos) << r.out;
}

TEST(SeedAuditCliTest, OrderRefusesWhatItCannotAnswerNamingIt) {
  const std::pair<const char*, const char*> cases[] = {
      {"order --size 20 --seed 1", "--step K or --steps A:B"},
      {"order --seed 1 --step 0", "--data or --size"},
      {"order --size 20 --data synthetic:5 --seed 1 --step 0", "excludes"},
      {"order --size 20 --seed 1 --steps 5:2", "A must be below B"},
      {"order --size 20 --seed 1 --steps 1-2", "expected A:B"},
      {"order --size 20 --seed 1 --batch-size 4 --step 5", "epoch 0's 5 steps"},
      {"order --size 20 --seed 1 --world-size 2 --rank 2 --step 0", "rank 2 is outside"},
      {"order --size 20 --seed 1 --workers 2 --worker 2 --step 0", "worker 2 is outside"},
      {"order --size 20 --seed 1 --partition elastic --step 0", "seeding"},
  };
  for (const auto& [args, message] : cases) {
    auto r = run_command(audit(args));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
  }
}

// PyTorch prints [1, 3, 8, 4] for DistributedSampler(range(10), num_replicas=3,
// rank=1, seed=0); the default numpy order differs; a third name is refused.
TEST(SeedAuditCliTest, ShardWithTorchOrderIsPyTorchsShard) {
  auto r = run_command(audit(
      "shard --size 10 --world-size 3 --rank 1 --shuffle --seed 0 --order torch --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["indices"].get<std::vector<Index>>(),
            (std::vector<Index>{1, 3, 8, 4}));
  r = run_command(
      audit("shard --size 10 --world-size 3 --rank 1 --shuffle --seed 0 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(nlohmann::json::parse(r.out)["indices"].get<std::vector<Index>>(),
            (std::vector<Index>{1, 3, 8, 4}));
  r = run_command(audit("shard --size 10 --world-size 3 --rank 1 --order jax"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--order: jax not in {numpy,torch,shards}"), std::string::npos)
      << r.out;
}

TEST(SeedAuditCliTest, UnshuffledShardMatchesPyTorchDistributedSampler) {
  SL_REQUIRE_PYTHON_MODULE("torch");
  // Every (N, R, r, drop_last) below, computed by torch in one process.
  std::ostringstream combos;
  std::vector<std::tuple<int, int, int, bool>> cases;
  for (int n : {1, 2, 3, 5, 7, 10, 16, 31, 100}) {
    for (int world : {1, 2, 3, 4, 5, 8}) {
      for (bool drop : {false, true}) {
        if (drop && n < world) continue;
        for (int r = 0; r < world; ++r) cases.emplace_back(n, world, r, drop);
      }
    }
  }
  std::string script =
      "import json,sys\n"
      "from torch.utils.data.distributed import DistributedSampler as D\n"
      "for line in sys.stdin:\n"
      "  n,w,r,d=map(int,line.split())\n"
      "  print(json.dumps(list(D(range(n),num_replicas=w,rank=r,shuffle=False,"
      "drop_last=bool(d)))))\n";
  std::string input;
  for (auto& [n, w, r, d] : cases) {
    input += std::to_string(n) + " " + std::to_string(w) + " " + std::to_string(r) + " " +
             (d ? "1" : "0") + "\n";
  }
  std::string dir = testing_util::process_temp_dir();
  FILE* f = std::fopen((dir + "torch_shards.py").c_str(), "w");
  std::fputs(script.c_str(), f);
  std::fclose(f);
  f = std::fopen((dir + "torch_shards.in").c_str(), "w");
  std::fputs(input.c_str(), f);
  std::fclose(f);
  auto torch = run_command("/usr/bin/python3 " + dir + "torch_shards.py < " + dir +
                           "torch_shards.in");
  ASSERT_EQ(torch.exit_code, 0) << torch.out;
  std::istringstream lines(torch.out);
  std::string line;
  for (auto& [n, w, r, d] : cases) {
    ASSERT_TRUE(std::getline(lines, line));
    auto expected = nlohmann::json::parse(line).get<std::vector<Index>>();
    std::string args = "shard --size " + std::to_string(n) + " --world-size " +
                       std::to_string(w) + " --rank " + std::to_string(r) +
                       (d ? " --drop-last" : "") + " --json";
    // The CLI for a sample of cases (process start-up dominates), the library for all.
    if ((n + w + r) % 5 == 0) {
      auto cli = run_command(audit(args));
      ASSERT_EQ(cli.exit_code, 0) << cli.out;
      EXPECT_EQ(nlohmann::json::parse(cli.out)["indices"].get<std::vector<Index>>(),
                expected)
          << args;
    }
    DistributedSampler s(n, {.world_size = static_cast<std::uint64_t>(w),
                             .rank = static_cast<std::uint64_t>(r),
                             .shuffle = false,
                             .drop_last = d});
    EXPECT_EQ(s.indices(0), expected) << args;
  }
}

}  // namespace
}  // namespace seedloader
