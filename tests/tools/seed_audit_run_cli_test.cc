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

// A restart: run 0 on --world-size stops after 5 batches of epoch 0, run 1 resumes
// it on --resume-world-size.
const std::string kRestart =
    "--data synthetic:203 --workers 2 --epochs 2 --seed 5 --shuffle --seeding sample "
    "--resume-at 5";

TEST(SeedAuditRunCliTest, StridedResumeAtFewerRanksConsumesSamplesTwice) {
  // Run 0 read positions [0, 4 x 5 x 4), run 1 reads from 2 x 5 x 4 on.
  Audit a = run_audit(kRestart +
                      " --partition strided --batch-size 4 --world-size 4 "
                      "--resume-world-size 2");
  EXPECT_EQ(a.exit_code, 1) << a.out;
  EXPECT_EQ(a.kinds, (std::map<std::string, int>{{"resume_duplicate", 40}})) << a.out;
}

TEST(SeedAuditRunCliTest, StridedResumeAtMoreRanksLeavesAGap) {
  Audit a = run_audit(kRestart +
                      " --partition strided --batch-size 4 --world-size 2 "
                      "--resume-world-size 4");
  EXPECT_EQ(a.exit_code, 1) << a.out;
  EXPECT_EQ(a.kinds, (std::map<std::string, int>{{"resume_gap", 40}})) << a.out;
}

TEST(SeedAuditRunCliTest, ElasticResumeAtAnotherWorldSizeIsClean) {
  // G = 8 from 4 ranks to 2, and G = 6 from 2 ranks to 3; 203 is padded to a
  // multiple of G, so the resumed run also reads padding.
  for (const char* worlds : {"--batch-size 2 --world-size 4 --resume-world-size 2",
                             "--batch-size 3 --world-size 2 --resume-world-size 3",
                             "--batch-size 3 --world-size 2 --resume-world-size 3 "
                             "--drop-last"}) {
    Audit a = run_audit(kRestart + " --partition elastic " + worlds);
    EXPECT_EQ(a.exit_code, 0) << worlds << "\n" << a.out;
    EXPECT_TRUE(a.kinds.empty()) << worlds << "\n" << a.out;
  }
}

// A mixture whose small source cycles within each loader epoch, restarted at step 3
// on 2 ranks instead of 4 with other weights and a source added (--resume-data):
// every source read within its own epochs without a repeat or a gap.
TEST(SeedAuditRunCliTest, AMixtureRestartedWithOtherWeightsIsClean) {
  const std::string mix =
      R"( --data 'mix:{"sources": {"small": "synthetic:13", "large": "synthetic:50"},)"
      R"( "weights": {"small": 1, "large": 3}, "samples_per_epoch": 60}')";
  const std::string other =
      R"( --resume-data 'mix:{"sources": {"small": "synthetic:13", "large": "synthetic:50",)"
      R"( "extra": "synthetic:5"}, "weights": {"small": 3, "large": 1, "extra": 1},)"
      R"( "samples_per_epoch": 60}')";
  const std::string world =
      " --batch-size 3 --workers 1 --epochs 4 --world-size 4 --seed 5 --seeding sample"
      " --partition elastic";
  Audit plain = run_audit(mix + world);
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  Audit restarted =
      run_audit(mix + world + " --resume-at 3 --resume-world-size 2" + other);
  EXPECT_EQ(restarted.exit_code, 0) << restarted.out;
  EXPECT_TRUE(restarted.kinds.empty()) << restarted.out;
  // Without a mixture the new weights have nothing to apply to.
  Audit refused = run_audit(" --data synthetic:60" + world +
                            " --resume-at 3 --resume-world-size 2" + other);
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
}

TEST(SeedAuditRunCliTest, ElasticRefusesAWorldSizeNotDividingTheGlobalBatch) {
  auto r = run_command(std::string(SEEDLOADER_SEED_AUDIT) + " run " + kRestart +
                       " --partition elastic --batch-size 4 --world-size 2 "
                       "--resume-world-size 3 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--resume-world-size 3 does not divide the global batch 8"),
            std::string::npos)
      << r.out;
}

TEST(SeedAuditRunCliTest, ElasticRefusesSeedingOtherThanPerSample) {
  for (const char* seeding : {"full", "torch", "naive"}) {
    auto r = run_command(std::string(SEEDLOADER_SEED_AUDIT) +
                         " run --data synthetic:20 --partition elastic --seeding " +
                         seeding + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << seeding;
    EXPECT_NE(r.out.find("partition elastic needs seeding sample"), std::string::npos)
        << r.out;
  }
}

TEST(SeedAuditRunCliTest, ResumeAtMustFallInsideTheEpoch) {
  auto r = run_command(std::string(SEEDLOADER_SEED_AUDIT) +
                       " run --data synthetic:20 --batch-size 4 --world-size 2 "
                       "--resume-at 3 --resume-world-size 1 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--resume-at 3 is not below the 3 batches an epoch has on rank 0"),
            std::string::npos)
      << r.out;
  r = run_command(std::string(SEEDLOADER_SEED_AUDIT) +
                  " run --data synthetic:20 --resume-at 1 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--resume-at and --resume-world-size go together"),
            std::string::npos)
      << r.out;
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
