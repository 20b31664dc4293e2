// `seed-audit run` on a simulated world: seedloader's seeding (full, sample) is
// clean even with padded shards; PyTorch-style and naive seeding are caught.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "tests/common/run_command.h"

namespace seedloader {
namespace {

using testing_util::run_command;

struct Audit {
  int exit_code;
  std::map<std::string, int> kinds;
  std::string out;
};

Audit run_audit(const std::string& args) {
  auto r = run_command(std::string(SEEDLOADER_SEED_AUDIT) + " run " + args +
                       " --json - 2>/dev/null");
  Audit a{r.exit_code, {}, r.out};
  if (r.exit_code == 0 || r.exit_code == 1) {
    nlohmann::json j = nlohmann::json::parse(r.out);
    for (const auto& f : j["findings"]) a.kinds[f["kind"]] = f["count"];
  }
  return a;
}

const std::string kWorld =
    "--data synthetic:200 --batch-size 4 --workers 3 --epochs 2 --world-size 2 "
    "--seed 5 --shuffle";

TEST(SeedAuditRunCliTest, FullSeedingIsClean) {
  Audit a = run_audit(kWorld + " --seeding full");
  EXPECT_EQ(a.exit_code, 0) << a.out;
  EXPECT_TRUE(a.kinds.empty()) << a.out;
}

TEST(SeedAuditRunCliTest, SampleSeedingWithPaddedShardsIsClean) {
  // 10 samples on 4 ranks: two indices are padded onto a second rank.
  Audit a = run_audit(
      "--data synthetic:10 --batch-size 2 --workers 2 --epochs 2 --world-size 4 "
      "--seed 5 --shuffle --seeding sample");
  EXPECT_EQ(a.exit_code, 0) << a.out;
}

TEST(SeedAuditRunCliTest, NaiveSeedingDuplicatesAcrossWorkersEpochsAndRanks) {
  Audit a = run_audit(kWorld + " --seeding naive");
  EXPECT_EQ(a.exit_code, 1) << a.out;
  EXPECT_GT(a.kinds["worker_rng_duplicate"], 0);
  EXPECT_GT(a.kinds["epoch_rng_repeat"], 0);
  EXPECT_GT(a.kinds["rank_rng_duplicate"], 0);
}

TEST(SeedAuditRunCliTest, TorchSeedingDuplicatesAcrossRanksOnly) {
  Audit a = run_audit(kWorld + " --seeding torch --persistent-workers");
  EXPECT_EQ(a.exit_code, 1) << a.out;
  EXPECT_EQ(a.kinds, (std::map<std::string, int>{{"rank_rng_duplicate", 200}}));
}

TEST(SeedAuditRunCliTest, SamplesThatDrawNothingHaveNoStateToRepeat) {
  // Without random transforms the worker stream never advances: not a finding.
  Audit a = run_audit(kWorld + " --seeding full --transform ''");
  EXPECT_EQ(a.exit_code, 0) << a.out;
}

TEST(SeedAuditRunCliTest, ProgressBarGoesToStderrOnRequest) {
  auto r = run_command(std::string(SEEDLOADER_SEED_AUDIT) + " run " + kWorld +
                       " --progress 2>&1 >/dev/null");
  EXPECT_NE(r.out.find("batches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;
  auto quiet = run_command(std::string(SEEDLOADER_SEED_AUDIT) + " run " + kWorld +
                           " 2>&1 >/dev/null");
  EXPECT_EQ(quiet.out, "");
}

TEST(SeedAuditRunCliTest, BadDataSpecExitsTwo) {
  auto r = run_command(std::string(SEEDLOADER_SEED_AUDIT) + " run --data nothing:1 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown kind 'nothing'"), std::string::npos) << r.out;
  EXPECT_EQ(run_command(std::string(SEEDLOADER_SEED_AUDIT) +
                        " run --data synthetic:10 --seeding bogus 2>&1")
                .exit_code,
            2);
}

}  // namespace
}  // namespace seedloader
