// Elastic runs: under --partition elastic --seeding sample, step s trains the same
// global batch (sample indices, stream fingerprints and transformed bytes, in rank
// order) at any world size dividing the global batch size G, and a checkpoint saved
// at one world size resumes at another, continuing the same data stream. The
// weights then agree with an uninterrupted run's up to float summation order (the
// all-reduce adds per-rank gradients, so 4 ranks sum in another order than 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/train/train_fixture.h"

namespace seedloader::train_test {
namespace {

// One trained sample, as --trace writes it, less its rank and worker (which depend
// on the world size and --workers) and its run.
struct TracedSample {
  std::uint64_t step, epoch, batch, index;
  std::string rng, content;
  bool operator==(const TracedSample&) const = default;
};

// Every traced sample, in the file's order: step by step, rank by rank. `skipped`:
// the declared skips instead, with neither rng nor content.
std::vector<TracedSample> read_trace(const std::string& path, bool skipped = false) {
  std::vector<TracedSample> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("skipped", false) != skipped) continue;
    out.push_back({j.at("step"), j.at("epoch"), j.at("batch"), j.at("index"),
                   j.value("rng", ""), j.value("content", "")});
  }
  return out;
}

// The largest absolute difference between same-named weights, and that relative to
// the largest weight of `b`.
struct WeightGap {
  double abs = 0, rel = 0;
};

class TrainElastic : public TrainFixture {
 protected:
  static WeightGap weight_gap(const std::string& a, const std::string& b) {
    SafetensorsFile fb(b);
    WeightGap gap;
    double largest = 0;
    for (const SafetensorsTensor& t : fb.tensors()) {
      auto d = fb.read(t);
      for (std::size_t i = 0; i + 4 <= d.size(); i += 4) {
        float v;
        std::memcpy(&v, d.data() + i, 4);
        largest = std::max(largest, std::fabs(static_cast<double>(v)));
      }
    }
    gap.abs = max_diff(a, b);
    gap.rel = gap.abs / largest;
    return gap;
  }

  // 40 samples, G = 8: 5 global batches an epoch, so step 6 stops one batch into
  // epoch 1 and step 12 two batches into epoch 2. Random crops and flips drawn from
  // per-sample streams make the bytes depend on the seeding, momentum makes the
  // weights depend on every earlier step.
  static constexpr const char* kArgs =
      "--data synthetic:40 --transform crop:32:4,hflip --model mlp:3072,16,10 "
      "--workers 1 --seed 21 --momentum 0.9 --partition elastic --seeding sample ";

  // The run exited 2 with `message` in its output.
  static void expect_refused(const testing_util::CommandResult& r,
                             const std::string& message) {
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  }

  testing_util::CommandResult run(int ranks, const std::string& g,
                                  const std::string& more) {
    return train(std::string(kArgs) + "--global-batch-size " + g + " " + more, ranks);
  }
};

TEST_F(TrainElastic, ResumedAtAnotherWorldSizeTrainsTheSameDataAndWeights) {
  auto first = run(
      4, "8",
      "--steps 6 --save " + path("ck.safetensors") + " --trace " + path("resumed.trace"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto rest = run(2, "8",
                  "--steps 12 --resume " + path("ck.safetensors") + " --save " +
                      path("resumed.safetensors") + " --trace " + path("resumed.trace"));
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  auto four = run(
      4, "8",
      "--steps 12 --save " + path("four.safetensors") + " --trace " + path("four.trace"));
  ASSERT_EQ(four.exit_code, 0) << four.out;
  auto two = run(
      2, "8",
      "--steps 12 --save " + path("two.safetensors") + " --trace " + path("two.trace"));
  ASSERT_EQ(two.exit_code, 0) << two.out;

  // Every step's global batch, sample by sample in rank order.
  const std::vector<TracedSample> resumed = read_trace(path("resumed.trace"));
  ASSERT_EQ(resumed.size(), 12u * 8u);
  for (std::size_t i = 0; i < resumed.size(); ++i)
    ASSERT_EQ(resumed[i].step, i / 8 + 1) << "sample " << i;
  EXPECT_TRUE(resumed == read_trace(path("four.trace")));
  EXPECT_TRUE(resumed == read_trace(path("two.trace")));
  // The resumed part carries run 1, so an appended file tells the runs apart.
  std::ifstream in(path("resumed.trace"));
  std::vector<int> runs;
  for (std::string line; std::getline(in, line);)
    runs.push_back(nlohmann::json::parse(line).at("run"));
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 0), 6 * 8);
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), 6 * 8);

  // Measured (float32 weights, largest 0.25): against 4 ranks max abs 7.5e-9,
  // relative 3.0e-8; against 2 ranks max abs 3.0e-8, relative 1.2e-7. For scale,
  // another sample order (--seed 22 from the same weights) puts them 2.4e-2 apart
  // and one step fewer 6.7e-3.
  for (const char* other : {"four.safetensors", "two.safetensors"}) {
    const WeightGap gap = weight_gap(path("resumed.safetensors"), path(other));
    std::printf("resumed vs %s: max abs %.3g, relative %.3g\n", other, gap.abs, gap.rel);
    EXPECT_LT(gap.abs, 1e-7) << other;
    EXPECT_LT(gap.rel, 4e-7) << other;
  }
}

// A mixture (--data mix:...) saved at step 7 under weights 1:3 on 2 ranks and
// resumed on 3 with 2:1:1 and a source added: the saved steps keep their
// composition, the new weights hold from step 8 (1-based) on, and the trace, every
// source counted within its own epochs, audits clean: nothing of any source read
// twice or skipped. A resume that drops a source is refused by name.
TEST_F(TrainElastic, AMixtureResumedWithNewWeightsAtAnotherWorldSizeAuditsClean) {
  const std::string first =
      R"('mix:{"sources": {"small": "synthetic:13", "large": "synthetic:50"},)"
      R"( "weights": {"small": 1, "large": 3}, "samples_per_epoch": 60}')";
  const std::string second =
      R"('mix:{"sources": {"small": "synthetic:13", "large": "synthetic:50",)"
      R"( "extra": "synthetic:7"}, "weights": {"small": 2, "large": 1, "extra": 1},)"
      R"( "samples_per_epoch": 60}')";
  const std::string common =
      " --transform rrc:8,normalize:imagenet --model mlp:192,16,10 --workers 1 --seed 4 "
      "--partition elastic --seeding sample --global-batch-size 12 --trace " +
      path("mix.trace");
  auto a = train("--data " + first + common + " --steps 7 --save " + path("mix.ck"), 2);
  ASSERT_EQ(a.exit_code, 0) << a.out;
  auto b = train("--data " + second + common + " --steps 25 --resume " + path("mix.ck") +
                     " --save " + path("mix2.ck"),
                 3);
  ASSERT_EQ(b.exit_code, 0) << b.out;

  std::map<std::uint64_t, std::map<std::string, int>> per_step;
  std::ifstream in(path("mix.trace"));
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ++per_step[j.at("step")][j.at("source")];
  }
  ASSERT_EQ(per_step.size(), 25u);
  for (const auto& [step, counts] : per_step) {
    const std::map<std::string, int> want =
        step <= 7 ? std::map<std::string, int>{{"large", 9}, {"small", 3}}
                  : std::map<std::string, int>{{"extra", 3}, {"large", 3}, {"small", 6}};
    EXPECT_EQ(counts, want) << "step " << step;
  }
  const auto audit = testing_util::run_command(
      std::string(SEEDLOADER_AUDIT) + " trace " + path("mix.trace") +
      " --source-size small=13 --source-size large=50"
      " --source-size extra=7 2>&1");
  EXPECT_EQ(audit.exit_code, 0) << audit.out;
  EXPECT_NE(audit.out.find("clean: 300 samples"), std::string::npos) << audit.out;
  // Each step's sources against the weights of a checkpoint's mixture state.
  auto composition = [&](const std::string& checkpoint) {
    {
      std::ofstream state(path("state.json"));
      state << SafetensorsFile(path(checkpoint)).metadata().at("mixture");
    }
    return testing_util::run_command(std::string(SEEDLOADER_AUDIT) + " trace " +
                                     path("mix.trace") + " --mixture " +
                                     path("state.json") + " --global-batch 12 2>&1");
  };
  // The last state holds both schedules: every step drew as the weights then said.
  const auto last = composition("mix2.ck");
  EXPECT_EQ(last.exit_code, 0) << last.out;
  // The first holds only the first weights: steps 8 on are off.
  const auto first_only = composition("mix.ck");
  EXPECT_EQ(first_only.exit_code, 1) << first_only.out;
  EXPECT_NE(first_only.out.find("mixture_composition"), std::string::npos)
      << first_only.out;

  // seed-audit order, given the spec resumed under and the last state, computes
  // every step the two runs trained, the saved steps under their old weights.
  std::map<std::uint64_t, std::multiset<std::string>> traced, ordered;
  {
    std::ifstream in(path("mix.trace"));
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      traced[j.at("step")].insert(j.at("source").get<std::string>() + "/" +
                                  std::to_string(j.at("source_epoch").get<int>()) + "/" +
                                  std::to_string(j.at("index").get<int>()));
    }
  }
  {
    std::ofstream state(path("state.json"));
    state << SafetensorsFile(path("mix2.ck")).metadata().at("mixture");
  }
  for (int epoch = 0; epoch < 5; ++epoch) {
    const auto order = testing_util::run_command(
        std::string(SEEDLOADER_AUDIT) + " order --data " + second + " --mixture " +
        path("state.json") +
        " --seed 4 --batch-size 4 --world-size 3 --partition elastic --seeding sample"
        " --steps 0:5 --epoch " +
        std::to_string(epoch) + " --json " + path("order.jsonl") + " 2>&1");
    ASSERT_EQ(order.exit_code, 0) << order.out;
    std::ifstream in(path("order.jsonl"));
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      ordered[epoch * 5 + j.at("step").get<int>() + 1].insert(
          j.at("source").get<std::string>() + "/" +
          std::to_string(j.at("source_epoch").get<int>()) + "/" +
          std::to_string(j.at("source_index").get<int>()));
    }
  }
  EXPECT_EQ(ordered, traced);

  const std::string dropped =
      R"('mix:{"sources": {"large": "synthetic:50"}, "weights": {"large": 1},)"
      R"( "samples_per_epoch": 60}')";
  expect_refused(
      train("--data " + dropped + common + " --steps 9 --resume " + path("mix.ck"), 2),
      "the state's source 'small' is not in this mixture");
}

// Declared skips over a mixture: --skip-steps and --skip-samples (a mixture index)
// leave every other sample of every step as it was; the trace declares what went
// by source and source epoch, and the audit, per source and against the mixture's
// weights, is clean.
TEST_F(TrainElastic, DeclaredSkipsOverAMixtureLeaveTheRestAndAuditClean) {
  const std::string common =
      R"( --data 'mix:{"sources": {"small": "synthetic:13", "large": "synthetic:50"},)"
      R"( "weights": {"small": 1, "large": 3}, "samples_per_epoch": 60}')"
      " --transform rrc:8,normalize:imagenet --model mlp:192,16,10 --workers 1 --seed 4 "
      "--partition elastic --seeding sample --global-batch-size 12 --steps 10";
  ASSERT_EQ(
      train(common + " --trace " + path("full.trace") + " --save " + path("full.ck"), 2)
          .exit_code,
      0);
  std::ofstream(path("skip.txt")) << "3\n";  // small's sample 3
  const auto skipping = train(common + " --skip-steps 2:4 --skip-samples " +
                                  path("skip.txt") + " --trace " + path("skip.trace"),
                              2);
  ASSERT_EQ(skipping.exit_code, 0) << skipping.out;
  // (step, source, source epoch, index, content) per line, by step.
  using Line =
      std::tuple<std::uint64_t, std::string, std::uint64_t, std::uint64_t, std::string>;
  auto lines = [&](const std::string& file, bool skipped) {
    std::multiset<Line> out;
    std::ifstream in(path(file));
    for (std::string text; std::getline(in, text);) {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (j.value("skipped", false) != skipped) continue;
      out.insert({j.at("step"), j.at("source"), j.at("source_epoch"), j.at("index"),
                  skipped ? "" : j.at("content").get<std::string>()});
    }
    return out;
  };
  std::multiset<Line> kept, gone;
  for (const Line& l : lines("full.trace", false)) {
    // Global steps 2 and 3 are the trace's 3 and 4 (it counts from 1).
    const bool skipped = std::get<0>(l) == 3 || std::get<0>(l) == 4 ||
                         (std::get<1>(l) == "small" && std::get<3>(l) == 3);
    (skipped ? gone : kept)
        .insert(skipped ? Line{std::get<0>(l), std::get<1>(l), std::get<2>(l),
                               std::get<3>(l), ""}
                        : l);
  }
  ASSERT_GT(gone.size(), 24u) << "small's sample 3 is met outside the skipped steps";
  EXPECT_EQ(lines("skip.trace", false), kept);
  EXPECT_EQ(lines("skip.trace", true), gone);

  const auto audit = testing_util::run_command(
      std::string(SEEDLOADER_AUDIT) + " trace " + path("skip.trace") +
      " --source-size small=13 --source-size large=50 2>&1");
  EXPECT_EQ(audit.exit_code, 0) << audit.out;
  EXPECT_NE(audit.out.find("declared_skip"), std::string::npos) << audit.out;
  {
    std::ofstream state(path("state.json"));
    state << SafetensorsFile(path("full.ck")).metadata().at("mixture");
  }
  const auto composition = testing_util::run_command(
      std::string(SEEDLOADER_AUDIT) + " trace " + path("skip.trace") + " --mixture " +
      path("state.json") + " --global-batch 12 2>&1");
  EXPECT_EQ(composition.exit_code, 0) << composition.out;

  // seed-audit order computes the same steps from the configuration: epoch 0 and
  // 1, what each trains and what each declares skipped.
  std::multiset<Line> ordered_kept, ordered_gone;
  for (const int epoch : {0, 1}) {
    const auto order = testing_util::run_command(
        std::string(SEEDLOADER_AUDIT) + " order" +
        common.substr(0, common.find(" --transform")) +
        " --seed 4 --batch-size 6 --world-size 2 --partition elastic --seeding sample"
        " --skip-steps 2:4 --skip-samples " +
        path("skip.txt") + " --steps 0:5 --epoch " + std::to_string(epoch) + " --json " +
        path("order.jsonl") + " 2>&1");
    ASSERT_EQ(order.exit_code, 0) << order.out;
    std::ifstream in(path("order.jsonl"));
    for (std::string text; std::getline(in, text);) {
      const nlohmann::json j = nlohmann::json::parse(text);
      const Line l{epoch * 5 + j.at("step").get<std::uint64_t>() + 1, j.at("source"),
                   j.at("source_epoch"), j.at("source_index"), ""};
      (j.at("skipped").get<bool>() ? ordered_gone : ordered_kept).insert(l);
    }
  }
  std::multiset<Line> kept_where;
  for (const Line& l : kept)
    kept_where.insert(
        {std::get<0>(l), std::get<1>(l), std::get<2>(l), std::get<3>(l), ""});
  EXPECT_EQ(ordered_kept, kept_where);
  EXPECT_EQ(ordered_gone, gone);
}

// Declared skips: --skip-steps leaves those steps untrained and every other step
// training exactly what it would have; the checkpoint keeps the list, a resume at
// another world size keeps it and may add to it. The trace declares the skipped
// samples, and seed-audit reports them as declared_skip, not as a gap.
TEST_F(TrainElastic, DeclaredSkipsLeaveEveryOtherStepAsItWasAcrossAResume) {
  // 15 steps: three whole epochs of 5, so the audit can check each one's coverage.
  auto full = run(4, "8", "--steps 15 --trace " + path("full.trace"));
  ASSERT_EQ(full.exit_code, 0) << full.out;
  auto skipping = run(
      4, "8",
      "--steps 15 --skip-steps 3:5 --skip-steps 8:9 --trace " + path("skipping.trace"));
  ASSERT_EQ(skipping.exit_code, 0) << skipping.out;
  std::vector<TracedSample> want = read_trace(path("full.trace"));
  // Global steps 3, 4 and 8 are the trace's steps 4, 5 and 9 (it counts from 1).
  std::vector<TracedSample> declared;
  for (const TracedSample& t : want) {
    if (t.step == 4 || t.step == 5 || t.step == 9)
      declared.push_back({t.step, t.epoch, t.batch, t.index, "", ""});
  }
  std::erase_if(want, [](const TracedSample& t) {
    return t.step == 4 || t.step == 5 || t.step == 9;
  });
  ASSERT_EQ(want.size(), 12u * 8u);
  EXPECT_TRUE(read_trace(path("skipping.trace")) == want);
  EXPECT_TRUE(read_trace(path("skipping.trace"), true) == declared);

  auto first = run(4, "8",
                   "--steps 6 --skip-steps 3:5 --save " + path("ck.safetensors") +
                       " --trace " + path("resumed.trace"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto rest = run(2, "8",
                  "--steps 15 --skip-steps 8:9 --resume " + path("ck.safetensors") +
                      " --trace " + path("resumed.trace"));
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  EXPECT_TRUE(read_trace(path("resumed.trace")) == want);
  EXPECT_TRUE(read_trace(path("resumed.trace"), true) == declared);

  // The audit: clean, 24 samples declared skipped. Without the declarations the
  // same trace has a gap where the skipped steps were.
  const auto audit = [&](const std::string& trace) {
    return launch(std::string(SEEDLOADER_AUDIT) + " trace --dataset-size 40 " +
                      "--global-batch 8 --json " + path("report.json") + " " +
                      path(trace),
                  0);
  };
  const auto report = audit("resumed.trace");
  ASSERT_EQ(report.exit_code, 0) << report.out;
  EXPECT_NE(report.out.find("declared_skip: 24 samples"), std::string::npos)
      << report.out;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(path("report.json")));
  EXPECT_EQ(j["verdict"], "clean") << report.out;
  EXPECT_EQ(j["samples"], 12 * 8);
  ASSERT_EQ(j["information"].size(), 1u) << report.out;
  EXPECT_EQ(j["information"][0]["kind"], "declared_skip");
  EXPECT_EQ(j["information"][0]["count"], 3 * 8);
  {
    std::ifstream in(path("resumed.trace"));
    std::ofstream out(path("undeclared.trace"));
    for (std::string line; std::getline(in, line);)
      if (line.find("\"skipped\":true") == std::string::npos) out << line << "\n";
  }
  const auto gap = audit("undeclared.trace");
  EXPECT_EQ(gap.exit_code, 1) << gap.out;
  EXPECT_NE(gap.out.find("resume_gap: 24 samples"), std::string::npos) << gap.out;
}

// --skip-samples: the trace declares each skipped sample in the step it would have
// been in, every epoch, and the audit is clean.
TEST_F(TrainElastic, SkippedSamplesAreDeclaredInTheTraceEveryEpoch) {
  std::ofstream(path("skip.txt")) << "5\n17\n";
  ASSERT_EQ(
      run(2, "8",
          "--steps 10 --skip-samples " + path("skip.txt") + " --trace " + path("t.trace"))
          .exit_code,
      0);
  const std::vector<TracedSample> declared = read_trace(path("t.trace"), true);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;  // (epoch, index)
  for (const TracedSample& t : declared) seen.emplace_back(t.epoch, t.index);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{
                      {0, 5}, {0, 17}, {1, 5}, {1, 17}}));
  for (const TracedSample& t : read_trace(path("t.trace")))
    EXPECT_TRUE(t.index != 5 && t.index != 17) << "step " << t.step;
  const auto report =
      launch(std::string(SEEDLOADER_AUDIT) +
                 " trace --dataset-size 40 --global-batch 8 " + path("t.trace"),
             0);
  EXPECT_EQ(report.exit_code, 0) << report.out;
  EXPECT_NE(report.out.find("declared_skip: 4 samples"), std::string::npos) << report.out;
}

// --canonical-nodes C: the same global batches at 4 and 2 ranks, another order
// than without the split, and a checkpoint keeps C.
TEST_F(TrainElastic, CanonicalNodesTrainTheSameStepsAtAnyWorldSizeAndAreKept) {
  ASSERT_EQ(run(4, "8",
                "--steps 5 --canonical-nodes 4 --trace " + path("four.trace") +
                    " --save " + path("ck.safetensors"))
                .exit_code,
            0);
  ASSERT_EQ(
      run(2, "8", "--steps 5 --canonical-nodes 4 --trace " + path("two.trace")).exit_code,
      0);
  ASSERT_EQ(run(2, "8", "--steps 5 --trace " + path("plain.trace")).exit_code, 0);
  const std::vector<TracedSample> four = read_trace(path("four.trace"));
  ASSERT_EQ(four.size(), 5u * 8u);
  EXPECT_TRUE(four == read_trace(path("two.trace")));
  EXPECT_FALSE(four == read_trace(path("plain.trace")));
  expect_refused(
      run(2, "8", "--steps 8 --canonical-nodes 2 --resume " + path("ck.safetensors")),
      "canonical_nodes");
  expect_refused(
      run(2, "8", "--steps 8 --canonical-nodes 0 --resume " + path("ck.safetensors")),
      "saved with canonical_nodes = 4, this run has 0");
  // Unset, a resume goes on with the checkpoint's C: steps 5 to 7 as a run that
  // named C = 4 from the start trains them.
  const auto resumed = run(2, "8",
                           "--steps 8 --trace " + path("resumed.trace") + " --resume " +
                               path("ck.safetensors"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("4 canonical nodes, the checkpoint's"), std::string::npos)
      << resumed.out;
  ASSERT_EQ(run(2, "8", "--steps 8 --canonical-nodes 4 --trace " + path("straight.trace"))
                .exit_code,
            0);
  std::vector<TracedSample> tail = read_trace(path("straight.trace"));
  ASSERT_EQ(tail.size(), 8u * 8u);
  tail.erase(tail.begin(), tail.begin() + 5 * 8);
  EXPECT_TRUE(read_trace(path("resumed.trace")) == tail);
  expect_refused(train("--data synthetic:40 --model mlp:3072,16,10 --steps 1 "
                       "--canonical-nodes 2"),
                 "--canonical-nodes applies to --partition elastic only");
}

// A skip over 10^12 steps is three ranges: the checkpoint keeps them so (the whole
// epochs between as [epoch, first, end, epochs]), and a resume skips them all.
TEST_F(TrainElastic, ASkipOfManyEpochsIsKeptAsRangesAcrossAResume) {
  auto first =
      run(2, "8",
          "--steps 3 --skip-steps 2:1000000000000 --save " + path("span.safetensors"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const SafetensorsFile saved(path("span.safetensors"));
  EXPECT_EQ(nlohmann::json::parse(saved.metadata().at("skip"))["steps"],
            nlohmann::json::parse("[[0, 2, 5], [1, 0, 5, 199999999998], "
                                  "[199999999999, 0, 5]]"));
  auto rest = run(2, "8",
                  "--steps 12 --resume " + path("span.safetensors") + " --trace " +
                      path("span.trace"));
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  EXPECT_TRUE(read_trace(path("span.trace")).empty()) << "every step after 1 is skipped";
  EXPECT_EQ(read_trace(path("span.trace"), true).size(), 9u * 8u);
}

TEST_F(TrainElastic, SkipFlagsAreCheckedNamingTheValue) {
  expect_refused(run(2, "8", "--steps 2 --skip-steps 5:5"),
                 "--skip-steps 5:5: expected A:B, global steps with A < B");
  // A directory or a device is no list of samples (read, it was an empty one).
  std::filesystem::create_directories(path("folder"));
  expect_refused(
      run(2, "8", "--steps 2 --skip-samples " + path("folder")),
      "--skip-samples " + path("folder") + ": a directory, not a regular file");
  expect_refused(run(2, "8", "--steps 2 --skip-samples /dev/zero"),
                 "--skip-samples /dev/zero: a character device, not a regular file");
  expect_refused(run(2, "8", "--steps 2 --skip-samples " + path("missing.txt")),
                 "--skip-samples " + path("missing.txt") + ": cannot be read");
  {
    std::ofstream bad(path("bad.txt"));
    bad << "3\n# a comment\n\nseven\n";
  }
  expect_refused(run(2, "8", "--steps 2 --skip-samples " + path("bad.txt")),
                 "bad.txt:4: 'seven' is not a sample index");
  auto worker =
      train("--data synthetic:40 --model mlp:3072,16,10 --steps 1 --skip-samples " +
            path("bad.txt"));
  expect_refused(worker, "--skip-samples needs --seeding sample");
}

TEST_F(TrainElastic, WorldSizeThatDoesNotDivideTheGlobalBatchIsRefused) {
  auto out = run(3, "8", "--steps 1");
  expect_refused(out,
                 "--global-batch-size 8 is not divisible by the world size "
                 "(mpirun -np 3)");
}

TEST_F(TrainElastic, ResumeWithAnotherGlobalBatchSizeIsRefusedNamingBoth) {
  auto first = run(2, "8", "--steps 2 --save " + path("ck.safetensors"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto other = run(2, "4", "--steps 4 --resume " + path("ck.safetensors"));
  expect_refused(other,
                 "saved with global batch size 8, this run has 4 (pass "
                 "--global-batch-size 8");
  // A strided run cannot pick up an elastic checkpoint's data stream either.
  auto strided = train(
      "--data synthetic:40 --transform crop:32:4,hflip --model mlp:3072,16,10 "
      "--workers 1 --momentum 0.9 --seeding sample --batch-size 4 --steps 4 --resume " +
          path("ck.safetensors"),
      2);
  expect_refused(strided,
                 "saved with --partition elastic, this run has --partition "
                 "strided");
}

TEST_F(TrainElastic, StridedCheckpointAtAnotherWorldSizeIsStillRefused) {
  const std::string args =
      "--data synthetic:40 --model mlp:3072,16,10 --workers 1 --seed 3 --batch-size 4 ";
  auto first = train(args + "--steps 2 --save " + path("ck.safetensors"), 2);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto other = train(args + "--steps 4 --resume " + path("ck.safetensors"), 1);
  expect_refused(other, "saved with world size 2, this run has 1");
}

TEST_F(TrainElastic, GlobalBatchSizeNeedsTheElasticPartition) {
  auto out = train("--data synthetic:40 --model mlp:3072,16,10 --global-batch-size 8");
  expect_refused(out, "--global-batch-size applies to --partition elastic only");
  out = train("--data synthetic:40 --model mlp:3072,16,10 --partition elastic");
  expect_refused(out, "--partition elastic needs --seeding sample");
}

}  // namespace
}  // namespace seedloader::train_test
