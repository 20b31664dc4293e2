// `seed-audit trace` as a user runs it: exit codes 0/1/2, the JSON report to a file
// or stdout, and errors that name the line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "seedloader/audit.h"
#include "seedloader/data_loader.h"
#include "seedloader/error.h"
#include "seedloader/stream_probe_dataset.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/tools/audit_simulation.h"

namespace seedloader::audit {
namespace {

using testing_util::run_command;

std::string audit(const std::string& args) {
  return std::string(SEEDLOADER_SEED_AUDIT) + " " + args;
}

std::string write_trace(const std::string& name,
                        const std::vector<SampleRecord>& records) {
  std::string path = testing_util::process_temp_dir() + name;
  std::ofstream f(path);
  for (const SampleRecord& r : records) {
    if (r.skipped) {
      f << nlohmann::json{{"rank", r.rank},
                          {"epoch", r.epoch},
                          {"batch", r.batch},
                          {"index", r.index},
                          {"skipped", true}}
               .dump()
        << "\n";
      continue;
    }
    f << nlohmann::json{{"rank", r.rank},     {"epoch", r.epoch},
                        {"worker", r.worker}, {"batch", r.batch},
                        {"index", r.index},   {"rng", std::to_string(r.rng)}}
             .dump()
      << "\n";
  }
  return path;
}

TEST(SeedAuditTraceCliTest, CleanTraceExitsZero) {
  std::string path = write_trace("clean.jsonl", simulate(World{.ranks = 2, .epochs = 2}));
  auto r = run_command(audit("trace " + path + " --dataset-size 103 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("clean: 208 samples"), std::string::npos) << r.out;
}

TEST(SeedAuditTraceCliTest, NaiveTraceExitsOneWithJsonReport) {
  std::string path =
      write_trace("naive.jsonl",
                  simulate(World{.ranks = 1, .epochs = 1, .mode = SeedingMode::kNaive}));
  std::string report = testing_util::process_temp_dir() + "naive_report.json";
  auto r = run_command(audit("trace " + path + " --json " + report + " 2>&1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("worker_rng_duplicate: 67 samples"), std::string::npos) << r.out;
  std::ifstream in(report);
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["verdict"], "findings");
  EXPECT_EQ(j["findings"][0]["kind"], "worker_rng_duplicate");

  auto stdout_json = run_command(audit("trace " + path + " --json - 2>/dev/null"));
  EXPECT_EQ(stdout_json.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(stdout_json.out)["findings"][0]["count"], 67);
}

// audit_trace_json() (what the Python package's audit.check() calls) gives the
// CLI's report exactly.
TEST(SeedAuditTraceCliTest, LibraryReportEqualsTheCliReport) {
  std::string path =
      write_trace("naive_lib.jsonl",
                  simulate(World{.ranks = 2, .epochs = 2, .mode = SeedingMode::kNaive}));
  auto cli =
      run_command(audit("trace " + path + " --dataset-size 103 --json - 2>/dev/null"));
  EXPECT_EQ(cli.exit_code, 1);
  nlohmann::json lib = nlohmann::json::parse(audit_trace_json(path, 103));
  EXPECT_EQ(lib, nlohmann::json::parse(cli.out));
  EXPECT_EQ(lib["verdict"], "findings");
  EXPECT_THROW(audit_trace_json(path + ".absent", std::nullopt), DataError);
}

// A trace of real loaders: `ranks` ranks of a strided, shuffled loader over 90
// samples, batch 4, seed 11, epochs 0 and 1, from batch `from` of each epoch on,
// its batches numbered from `number_from`.
std::vector<SampleRecord> recorded_run(std::uint64_t ranks, std::uint64_t from = 0,
                                       std::uint64_t number_from = 0) {
  StreamProbeDataset ds(90, 1);
  std::vector<SampleRecord> out;
  for (std::uint64_t rank = 0; rank < ranks; ++rank) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = 2;
    o.shuffle = true;
    o.seed = 11;
    o.rank = rank;
    o.world_size = ranks;
    o.seeding = SeedScope::kSample;
    DataLoader loader(ds, o);
    for (std::uint32_t epoch = 0; epoch < 2; ++epoch) {
      loader.resume(epoch, from);
      for (const Batch& b : loader) {
        for (std::size_t i = 0; i < b.indices().size(); ++i) {
          SampleRecord r;
          r.rank = static_cast<std::uint32_t>(rank);
          r.epoch = epoch;
          r.worker = static_cast<std::uint32_t>(b.worker());
          r.batch = b.number() - from + number_from;
          r.index = b.indices()[i];
          r.rng = b.fingerprints()[i];
          out.push_back(r);
        }
      }
    }
  }
  return out;
}

TEST(SeedAuditTraceCliTest, ExpectPassesTheRunsOwnConfigurationAndNamesWhatDiffers) {
  const std::string config =
      "--size 90 --seed 11 --batch-size 4 --shuffle --seeding sample";
  const std::string two = write_trace("two_ranks.jsonl", recorded_run(2));
  auto r = run_command(
      audit("trace " + two + " --expect \"" + config + " --world-size 2\" 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::string common = "--batch-size 4 --shuffle --seeding sample";
  const std::pair<std::string, std::string> cases[] = {
      {"--size 90 --seed 12 --world-size 2", "no step of the configuration holds it"},
      {"--size 90 --seed 11 --world-size 3",
       "it is what rank 0 of a world of 2 reads at this step: the world size changed"},
      {"--size 80 --seed 11 --world-size 2", "the data set grew"},
  };
  for (const auto& [change, says] : cases) {
    r = run_command(
        audit("trace " + two + " --expect \"" + common + " " + change + "\" 2>&1"));
    EXPECT_EQ(r.exit_code, 1) << change << "\n" << r.out;
    EXPECT_NE(r.out.find("order_mismatch"), std::string::npos) << change << "\n" << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << change << "\n" << r.out;
  }
  // A run that resumed at batch 3 but numbered its batches from 0.
  const std::string shifted = write_trace("shifted.jsonl", recorded_run(1, 3, 0));
  r = run_command(audit("trace " + shifted + " --expect \"" + config + "\" 2>&1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("run 0 rank 0 epoch 0 batch 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("it is the configuration's step 3 of rank 0: the run's steps are "
                       "numbered 3 behind the order"),
            std::string::npos)
      << r.out;
  // Numbered as the resume point says: clean.
  const std::string resumed = write_trace("resumed.jsonl", recorded_run(1, 3, 3));
  r = run_command(
      audit("trace " + resumed + " --expect \"" + config + "\" --allow-missing 12 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // Declared skips: a run that lacks those steps follows the configuration; one
  // that trained them does not.
  std::vector<SampleRecord> skipping = recorded_run(1);
  std::erase_if(skipping, [](const SampleRecord& s) {
    return s.epoch == 0 && s.batch >= 4 && s.batch < 6;
  });
  const std::string skipped = write_trace("skipped.jsonl", skipping);
  const std::string with_skips = config + " --skip-steps 4:6";
  r = run_command(audit("trace " + skipped + " --expect \"" + with_skips + "\" 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const std::string one = write_trace("one_rank.jsonl", recorded_run(1));
  r = run_command(audit("trace " + one + " --expect \"" + with_skips + "\" 2>&1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("run 0 rank 0 epoch 0 batch 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("declares the step skipped (--skip-steps): the run trained a step "
                       "it should have skipped"),
            std::string::npos)
      << r.out;
  // A trace that declares its skips: the configuration must declare the same.
  std::vector<SampleRecord> declaring = recorded_run(1);
  for (SampleRecord& s : declaring)
    s.skipped = s.epoch == 0 && s.batch >= 4 && s.batch < 6;
  const std::string declared = write_trace("declared.jsonl", declaring);
  r = run_command(audit("trace " + declared + " --expect \"" + with_skips + "\" 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("declared_skip: 8 samples"), std::string::npos) << r.out;
  r = run_command(
      audit("trace " + declared + " --expect \"" + config + " --skip-steps 5:6\" 2>&1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("order_mismatch: 4 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run 0 rank 0 epoch 0 batch 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped where the configuration skips []: the run declared other "
                       "skips than the configuration"),
            std::string::npos)
      << r.out;
  // Steps skipped at an epoch's end (90 samples in batches of 4: steps 0-22) that
  // the run trained: named as such.
  r = run_command(
      audit("trace " + one + " --expect \"" + config + " --skip-steps 21:23\" 2>&1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("batch 21"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("declares the step skipped"), std::string::npos) << r.out;
  // Declared sample skips: --skip-samples FILE says the configuration's.
  std::vector<SampleRecord> without = recorded_run(1);
  for (SampleRecord& s : without) s.skipped = s.index == 5 || s.index == 17;
  const std::string samples = write_trace("samples.jsonl", without);
  const std::string list = testing_util::process_temp_dir() + "skipped.txt";
  std::ofstream(list) << "5\n# a comment\n17\n";
  r = run_command(audit("trace " + samples + " --expect \"" + config +
                        " --skip-samples " + list + "\" 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = run_command(audit("trace " + samples + " --expect \"" + config + "\" 2>&1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--skip-samples FILE"), std::string::npos) << r.out;
  // Flags that are not a configuration: exit 2 naming --expect.
  r = run_command(audit("trace " + two + " --expect \"--size 90 --batch-size 4\" 2>&1"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--expect \"--size 90 --batch-size 4\": --seed is required"),
            std::string::npos)
      << r.out;
}

TEST(SeedAuditTraceCliTest, MalformedLineExitsTwoNamingTheLine) {
  std::string path = testing_util::process_temp_dir() + "bad.jsonl";
  {
    std::ofstream f(path);
    f << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"a"})"
      << "\n"
      << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":"7","rng":"a"})"
      << "\n";
  }
  auto r = run_command(audit("trace " + path + " 2>&1"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find(path + ":2: \"index\" must be a non-negative integer"),
            std::string::npos)
      << r.out;
}

// Before, --allow-missing -1 wrapped to 2^64 - 1 and turned a coverage finding
// into "clean".
TEST(SeedAuditTraceCliTest, NegativeCountsExitTwoNamingTheOption) {
  std::string path = write_trace("short.jsonl", simulate(World{.size = 20, .ranks = 1}));
  EXPECT_EQ(run_command(audit("trace " + path + " --dataset-size 30 2>&1")).exit_code, 1);
  auto r =
      run_command(audit("trace " + path + " --dataset-size 30 --allow-missing -1 2>&1"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--allow-missing"), std::string::npos) << r.out;
  r = run_command(audit("trace " + path + " --dataset-size -30 2>&1"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--dataset-size"), std::string::npos) << r.out;
}

TEST(SeedAuditTraceCliTest, InputErrorsExitTwo) {
  std::string path = write_trace("small.jsonl", simulate(World{.size = 20, .ranks = 1}));
  auto r = run_command(audit("trace " + path + " --dataset-size 10 2>&1"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("is not below the dataset size 10"), std::string::npos) << r.out;
  EXPECT_EQ(run_command(audit("trace /nonexistent/trace.jsonl 2>&1")).exit_code, 2);
  EXPECT_EQ(run_command(audit("trace 2>&1")).exit_code, 2);
  std::string empty = testing_util::process_temp_dir() + "empty.jsonl";
  std::ofstream{empty};
  auto e = run_command(audit("trace " + empty + " 2>&1"));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.out.find("holds no samples"), std::string::npos) << e.out;
}

}  // namespace
}  // namespace seedloader::audit
