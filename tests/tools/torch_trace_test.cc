// tools/torch_trace.py on real PyTorch DataLoaders with 2 workers, audited by
// `seed-audit trace`: the classic PyTorch seeding bugs are found, a correctly
// seeded pipeline is clean. Skipped when /usr/bin/python3 cannot import torch.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"

namespace seedloader {
namespace {

using testing_util::run_command;

// Records `scenario` (see torch_trace_scenarios.py) and audits it; returns the
// finding counts by kind, and the exit code in `exit_code`.
std::map<std::string, int> audit_scenario(const std::string& scenario, int& exit_code) {
  std::string trace = testing_util::process_temp_dir() + "torch_" + scenario + ".jsonl";
  std::string report = testing_util::process_temp_dir() + "torch_" + scenario + ".json";
  auto rec = run_command("/usr/bin/python3 " SEEDLOADER_SOURCE_DIR
                         "/tests/tools/torch_trace_scenarios.py " +
                         scenario + " " + trace + " 2>&1");
  EXPECT_EQ(rec.exit_code, 0) << rec.out;
  auto audit = run_command(std::string(SEEDLOADER_SEED_AUDIT) + " trace " + trace +
                           " --dataset-size 16 --json " + report + " 2>&1");
  exit_code = audit.exit_code;
  std::map<std::string, int> kinds;
  std::ifstream in(report);
  if (!in) {
    ADD_FAILURE() << "no report: " << audit.out;
    return kinds;
  }
  nlohmann::json j = nlohmann::json::parse(in);
  for (const auto& f : j["findings"]) {
    kinds[f["kind"].get<std::string>()] = f["count"].get<int>();
  }
  return kinds;
}

class TorchTraceTest : public testing::Test {
 protected:
  void SetUp() override { SL_REQUIRE_PYTHON_MODULE("torch"); }
};

TEST_F(TorchTraceTest, DatasetOwnedNumpyGeneratorIsDuplicatedAcrossWorkers) {
  int code = -1;
  auto kinds = audit_scenario("own_rng", code);
  EXPECT_EQ(code, 1);
  // 16 samples in batches of 2 on 2 workers: worker 1's 8 samples repeat worker 0's.
  EXPECT_EQ(kinds["worker_rng_duplicate"], 8);
}

TEST_F(TorchTraceTest, WorkerInitFnSeedingFromInitialSeedIsClean) {
  int code = -1;
  auto kinds = audit_scenario("seeded", code);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(kinds.empty());
}

TEST_F(TorchTraceTest, SameManualSeedOnTwoRanksDuplicatesStatesAcrossRanks) {
  int code = -1;
  auto kinds = audit_scenario("same_seed_ranks", code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds["rank_rng_duplicate"], 16);  // all of rank 1's samples
}

TEST_F(TorchTraceTest, RandomSamplerOnTwoRanksReadsTheSameSamples) {
  int code = -1;
  auto kinds = audit_scenario("random_sampler", code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(kinds["rank_batch_duplicate"], 16);
  EXPECT_EQ(kinds.count("rank_rng_duplicate"), 0u);
}

TEST_F(TorchTraceTest, RestartingTheEpochFromItsStartConsumesSamplesTwice) {
  int code = -1;
  auto kinds = audit_scenario("restart_from_start", code);
  EXPECT_EQ(code, 1);
  // Run 0 consumed 3 batches of 2; its workers may have loaded up to 4 more
  // (prefetch_factor 2 x 2 workers) before it failed. Run 1 starts over with the
  // same seed, so the same samples get the same states: only the index repeats.
  EXPECT_EQ(kinds.size(), 1u);
  EXPECT_GE(kinds["resume_duplicate"], 6);
  EXPECT_LE(kinds["resume_duplicate"], 14);
}

}  // namespace
}  // namespace seedloader
