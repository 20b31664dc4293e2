// The detectors' definitions: correct seedloader runs (full and per-sample
// seeding, padded shards) are clean; each classic bug gives its finding.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "seedloader/derive.h"
#include "seedloader/elastic_sampler.h"
#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"
#include "tests/tools/audit_simulation.h"
#include "tools/seed_audit/auditor.h"
#include "tools/seed_audit/report_format.h"

namespace seedloader::audit {
namespace {

Report audit(const std::vector<SampleRecord>& records, AuditOptions options = {}) {
  Auditor a(options);
  for (const SampleRecord& r : records) a.add(r);
  return a.report();
}

std::map<std::string, std::uint64_t> kinds(const Report& r) {
  std::map<std::string, std::uint64_t> out;
  for (const Finding& f : r.findings) out[finding_name(f.kind)] = f.count;
  return out;
}

using Kinds = std::map<std::string, std::uint64_t>;

TEST(AuditorTest, FullSeedingWithPaddedShardsIsClean) {
  World w{.size = 103, .ranks = 4, .workers = 3, .draws_vary = true};
  Report r = audit(simulate(w), {.dataset_size = 103});
  EXPECT_TRUE(r.clean()) << report_text(r);
  EXPECT_EQ(r.samples, 3u * 4 * 26);
}

TEST(AuditorTest, PerSampleSeedingIsCleanWhenPaddingRepeatsAnIndexOnTwoRanks) {
  // 10 samples on 4 ranks: indices padded to 12, so two indices run on two ranks
  // with the same per-sample stream; that is by design.
  World w{.size = 10, .ranks = 4, .workers = 2, .batch = 2, .mode = SeedingMode::kSample};
  Report r = audit(simulate(w), {.dataset_size = 10});
  EXPECT_TRUE(r.clean()) << report_text(r);
}

TEST(AuditorTest, NaiveSeedingGivesEveryWorkerTheSameStates) {
  World w{.ranks = 1, .epochs = 1, .mode = SeedingMode::kNaive};
  Report r = audit(simulate(w));
  // Worker 0 has 9 batches, workers 1 and 2 have 9 and 8: the k-th sample of each
  // repeats worker 0's k-th sample.
  EXPECT_EQ(kinds(r), (Kinds{{"worker_rng_duplicate", 103 - 36}})) << report_text(r);
  const Example& e = r.findings[0].examples.at(0);
  EXPECT_EQ(e.sample.rank, e.other->rank);
  EXPECT_EQ(e.sample.epoch, e.other->epoch);
  EXPECT_NE(e.sample.worker, e.other->worker);
}

TEST(AuditorTest, NaiveSeedingWithVaryingDrawsStillShowsEachWorkersFirstSample) {
  World w{.ranks = 1, .epochs = 1, .draws_vary = true, .mode = SeedingMode::kNaive};
  EXPECT_GE(kinds(audit(simulate(w)))["worker_rng_duplicate"], 2u);
}

TEST(AuditorTest, NaiveSeedingRepeatsAcrossEpochsAndRanks) {
  World w{.ranks = 2, .epochs = 2, .mode = SeedingMode::kNaive};
  Kinds k = kinds(audit(simulate(w)));
  EXPECT_GT(k["worker_rng_duplicate"], 0u);
  EXPECT_GT(k["epoch_rng_repeat"], 0u);
  EXPECT_GT(k["rank_rng_duplicate"], 0u);
}

TEST(AuditorTest, TorchSeedingDuplicatesStatesAcrossRanksOnly) {
  World w{.ranks = 2, .epochs = 2, .mode = SeedingMode::kTorch};
  Report r = audit(simulate(w), {.dataset_size = 103});
  Kinds k = kinds(r);
  EXPECT_EQ(k.size(), 1u) << report_text(r);
  EXPECT_GT(k["rank_rng_duplicate"], 0u);
}

TEST(AuditorTest, RanksWithoutDistributedSamplerReadTheSameSamples) {
  World w{.ranks = 2, .epochs = 1, .distributed = false};
  Report r = audit(simulate(w));
  EXPECT_EQ(kinds(r), (Kinds{{"rank_batch_duplicate", 103}})) << report_text(r);
}

TEST(AuditorTest, SameSeedOnUnshardedRanksIsBothARankStateAndABatchDuplicate) {
  // PyTorch's classic pair of bugs: manual_seed(same) on every rank and no
  // DistributedSampler. Every repeat is at the same (epoch, index), far more than
  // padding explains, so the state finding must not hide behind the index one.
  World w{.ranks = 2, .epochs = 1, .distributed = false, .mode = SeedingMode::kTorch};
  Kinds k = kinds(audit(simulate(w)));
  EXPECT_EQ(k["rank_rng_duplicate"], 103u);
  EXPECT_EQ(k["rank_batch_duplicate"], 103u);
}

TEST(AuditorTest, PaddingRepeatsOfPerSampleStreamsStayClean) {
  // 103 samples on 4 ranks: one index padded onto a second rank per epoch, with
  // the same per-sample state by design.
  World w{.size = 103, .ranks = 4, .epochs = 2, .mode = SeedingMode::kSample};
  EXPECT_TRUE(audit(simulate(w), {.dataset_size = 103}).clean());
}

TEST(AuditorTest, ForgottenSetEpochRepeatsTheShuffledOrder) {
  World w{.ranks = 2, .epochs = 3, .set_epoch = false};
  Report r = audit(simulate(w));
  // Epochs 1 and 2 of both ranks repeat epoch 0.
  EXPECT_EQ(kinds(r), (Kinds{{"epoch_order_repeat", 4}})) << report_text(r);
  EXPECT_EQ(r.findings[0].examples[0].other->epoch, 0u);
}

TEST(AuditorTest, UnshuffledOrderRepeatsByDesign) {
  World w{.ranks = 2, .epochs = 3, .shuffle = false};
  EXPECT_TRUE(audit(simulate(w), {.dataset_size = 103}).clean());
}

TEST(AuditorTest, CoverageReportsAMissingSample) {
  World w{.ranks = 1, .epochs = 2};
  std::vector<SampleRecord> records = simulate(w);
  auto lost = std::find_if(records.begin(), records.end(), [](const SampleRecord& r) {
    return r.epoch == 1 && r.index == 42;
  });
  ASSERT_NE(lost, records.end());
  records.erase(lost);
  Report r = audit(records, {.dataset_size = 103});
  EXPECT_EQ(kinds(r), (Kinds{{"coverage", 1}})) << report_text(r);
  const Example& e = r.findings[0].examples.at(0);
  EXPECT_EQ(e.sample.epoch, 1u);
  EXPECT_EQ(e.sample.index, 42u);
  EXPECT_EQ(e.note, "missing from the epoch");
  EXPECT_TRUE(audit(records, {.dataset_size = 103, .allowed_missing = 1}).clean());
}

TEST(AuditorTest, CoverageReportsRepeatsBeyondPadding) {
  World w{.size = 100, .ranks = 1, .epochs = 1};
  std::vector<SampleRecord> records = simulate(w);
  SampleRecord again = records[5];
  again.rng ^= 1;  // a different state, so only the index repeats
  records.push_back(again);
  Report r = audit(records, {.dataset_size = 100});
  EXPECT_EQ(kinds(r), (Kinds{{"coverage", 1}})) << report_text(r);
}

TEST(AuditorTest, ReseedingEverySampleWithAConstantRepeatsWithinAWorker) {
  World w{.ranks = 1, .workers = 1, .epochs = 1};
  std::vector<SampleRecord> records = simulate(w);
  for (SampleRecord& r : records) r.rng = 1234;
  EXPECT_EQ(kinds(audit(records)), (Kinds{{"sample_rng_repeat", 102}}));
}

TEST(AuditorTest, SamplesWithoutRandomnessAreLeftToTheIndexFindings) {
  World w{.ranks = 1, .workers = 1, .epochs = 1};
  std::vector<SampleRecord> records = simulate(w);
  for (SampleRecord& r : records) {
    r.rng = 1234;
    r.has_rng = false;
  }
  EXPECT_TRUE(audit(records, {.dataset_size = 103}).clean());
}

TEST(AuditorTest, ReportDoesNotDependOnHowWorkersLinesInterleave) {
  World w{.ranks = 2, .epochs = 2, .set_epoch = false, .mode = SeedingMode::kNaive};
  std::vector<SampleRecord> records = simulate(w);
  std::vector<SampleRecord> by_worker = records;  // one file per worker, concatenated
  std::stable_sort(by_worker.begin(), by_worker.end(),
                   [](const SampleRecord& a, const SampleRecord& b) {
                     return std::tie(a.rank, a.epoch, a.worker) <
                            std::tie(b.rank, b.epoch, b.worker);
                   });
  EXPECT_EQ(kinds(audit(records)), kinds(audit(by_worker)));
}

// A job whose run 0 failed after `step` batches (per rank) of epoch 0 and whose
// run 1 resumed epoch 0 on `resumed.ranks` ranks at batch `resume_batch` of every
// rank, then ran the rest of `resumed`'s epochs (strided: DistributedSampler).
std::vector<SampleRecord> restarted(const World& first, std::uint64_t step,
                                    const World& resumed, std::uint64_t resume_batch) {
  std::vector<SampleRecord> out;
  for (const SampleRecord& r : simulate(first)) {
    if (r.epoch == 0 && r.batch < step) out.push_back(r);
  }
  for (SampleRecord r : simulate(resumed)) {
    if (r.epoch > 0 || r.batch >= resume_batch) {
      r.run = 1;
      out.push_back(r);
    }
  }
  return out;
}

TEST(AuditorTest, ResumingEachRanksBatchAtFewerRanksConsumesSamplesTwice) {
  // Run 0 read positions [0, 4 x 3 x 4) of the epoch's order, run 1 reads from
  // 2 x 3 x 4 on: 24 samples twice. Both pad 103 to 104, repeating position 0.
  World first{.size = 103, .ranks = 4, .epochs = 1, .mode = SeedingMode::kSample};
  World second = first;
  second.ranks = 2;
  Report r = audit(restarted(first, 3, second, 3), {.dataset_size = 103});
  EXPECT_EQ(kinds(r), (Kinds{{"resume_duplicate", 24}})) << report_text(r);
  const Example& e = r.findings[0].examples.at(0);
  EXPECT_EQ(e.sample.run, 1u);
  EXPECT_EQ(e.other->run, 0u);
  EXPECT_EQ(e.sample.epoch, 0u);
  EXPECT_EQ(e.sample.index, e.other->index);
  EXPECT_NE(report_text(r).find("run 1 rank "), std::string::npos) << report_text(r);
  EXPECT_EQ(report_json(r)["findings"][0]["examples"][0]["same_as"]["run"], 0);
}

TEST(AuditorTest, ResumingEachRanksBatchAtMoreRanksLeavesAGap) {
  World first{.size = 103, .ranks = 2, .epochs = 2, .mode = SeedingMode::kSample};
  World second = first;
  second.ranks = 4;
  Report r = audit(restarted(first, 3, second, 3), {.dataset_size = 103});
  EXPECT_EQ(kinds(r), (Kinds{{"resume_gap", 24}})) << report_text(r);
  const Example& e = r.findings[0].examples.at(0);
  EXPECT_EQ(e.sample.epoch, 0u);
  EXPECT_EQ(e.note, "consumed by none of the epoch's runs (0, 1)");
}

TEST(AuditorTest, RestartingTheEpochFromItsStartConsumesTheFirstRunsSamplesTwice) {
  World w{.size = 103, .ranks = 2, .epochs = 1, .mode = SeedingMode::kSample};
  EXPECT_EQ(kinds(audit(restarted(w, 3, w, 0), {.dataset_size = 103})),
            (Kinds{{"resume_duplicate", 2 * 3 * 4}}));
  // Without a dataset size: more cross-run repeats than padding could explain,
  // so all of them count, the padded position 103 (position 0 again) included.
  EXPECT_EQ(kinds(audit(restarted(w, 3, w, 0))), (Kinds{{"resume_duplicate", 25}}));
}

TEST(AuditorTest, PaddingRepeatedAcrossARestartIsNoFinding) {
  // 103 on 4 ranks: run 1 reads the padded position 103, a repeat of position 0,
  // which run 0 read. One more repeat than that is a duplicate.
  World w{.size = 103, .ranks = 4, .epochs = 2, .mode = SeedingMode::kSample};
  std::vector<SampleRecord> records = restarted(w, 3, w, 3);
  Report r = audit(records, {.dataset_size = 103});
  EXPECT_TRUE(r.clean()) << report_text(r);
  SampleRecord again = records.front();
  again.run = 1;
  records.push_back(again);
  EXPECT_EQ(kinds(audit(records, {.dataset_size = 103})),
            (Kinds{{"resume_duplicate", 1}}));
}

TEST(AuditorTest, AMissingSampleIsCoverageInOneRunAndAResumeGapAcrossRuns) {
  World w{.size = 103, .ranks = 2, .epochs = 1, .mode = SeedingMode::kSample};
  std::vector<SampleRecord> one = simulate(w);
  std::vector<SampleRecord> two = restarted(w, 3, w, 3);
  for (auto* records : {&one, &two}) {
    records->erase(std::find_if(records->begin(), records->end(),
                                [](const SampleRecord& r) { return r.index == 42; }));
  }
  EXPECT_EQ(kinds(audit(one, {.dataset_size = 103})), (Kinds{{"coverage", 1}}));
  EXPECT_EQ(kinds(audit(two, {.dataset_size = 103})), (Kinds{{"resume_gap", 1}}));
  EXPECT_TRUE(audit(two, {.dataset_size = 103, .allowed_missing = 1}).clean());
}

TEST(AuditorTest, DeclaredSkipsAreInformationNotAGapOrCoverage) {
  // Batch 3 of rank 0 and sample 42 were declared skipped: written as skipped
  // records instead of trained ones, in one run and across a restart.
  World w{.size = 103, .ranks = 2, .epochs = 2, .mode = SeedingMode::kSample};
  auto declare = [](std::vector<SampleRecord> records) {
    for (SampleRecord& r : records) {
      if (r.epoch == 1 && ((r.rank == 0 && r.batch == 3) || r.index == 42)) {
        r.skipped = true;
        r.has_rng = false;
      }
    }
    return records;
  };
  for (const auto& records : {declare(simulate(w)), declare(restarted(w, 3, w, 3))}) {
    const std::uint64_t skipped = std::count_if(
        records.begin(), records.end(), [](const SampleRecord& r) { return r.skipped; });
    std::set<std::pair<std::uint32_t, std::uint64_t>> distinct;  // (epoch, index)
    for (const SampleRecord& r : records)
      if (r.skipped) distinct.insert({r.epoch, r.index});
    ASSERT_GT(skipped, 1u);
    const Report r = audit(records, {.dataset_size = 103});
    EXPECT_TRUE(r.clean()) << report_text(r);
    EXPECT_EQ(r.samples, records.size() - skipped);
    ASSERT_EQ(r.information.size(), 1u);
    EXPECT_EQ(finding_name(r.information[0].kind), std::string("declared_skip"));
    // Counted once per epoch and index: a line declared twice counts once.
    EXPECT_EQ(r.information[0].count, distinct.size());
    std::vector<SampleRecord> twice = records;
    for (const SampleRecord& x : records)
      if (x.skipped) twice.push_back(x);
    EXPECT_EQ(audit(twice, {.dataset_size = 103}).information.at(0).count,
              distinct.size());
    EXPECT_EQ(r.information[0].examples.at(0).sample.epoch, 1u);
    EXPECT_NE(report_text(r).find("declared_skip: " + std::to_string(distinct.size())),
              std::string::npos)
        << report_text(r);
    const auto j = report_json(r);
    EXPECT_EQ(j["verdict"], "clean");
    EXPECT_EQ(j["information"][0]["kind"], "declared_skip");
  }
  // Left out without being declared, the same samples are a gap again.
  std::vector<SampleRecord> undeclared = declare(restarted(w, 3, w, 3));
  std::erase_if(undeclared, [](const SampleRecord& r) { return r.skipped; });
  EXPECT_EQ(kinds(audit(undeclared, {.dataset_size = 103})).count("resume_gap"), 1u);
  // A declared index outside the data set is named as declared.
  SampleRecord far = simulate(w).front();
  far.skipped = true;
  far.index = 103;
  Auditor a({.dataset_size = 103});
  try {
    a.add(far);
    FAIL() << "index 103 of 103 was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("declared skipped sample index 103"),
              std::string::npos)
        << e.what();
  }
}

// Elastic: global batch g is the same at 4 ranks x 2 and 2 ranks x 4 (G = 8).
std::vector<SampleRecord> elastic_restart(std::uint64_t size, std::uint64_t step) {
  std::vector<SampleRecord> out;
  for (std::uint32_t run : {0u, 1u}) {
    const std::uint64_t ranks = run == 0 ? 4 : 2;
    for (std::uint64_t rank = 0; rank < ranks; ++rank) {
      ElasticSampler s(
          size, {.world_size = ranks, .rank = rank, .batch_size = 8 / ranks, .seed = 3});
      std::vector<Index> order = s.indices(0);
      for (std::uint64_t b = run == 0 ? 0 : step; b < (run == 0 ? step : s.num_batches());
           ++b) {
        for (std::uint64_t k = 0; k < s.options().batch_size; ++k) {
          SampleRecord r;
          r.run = run;
          r.rank = static_cast<std::uint32_t>(rank);
          r.batch = b;
          r.index = order[b * s.options().batch_size + k];
          r.rng = sample_stream(3, 0, r.index).fingerprint();
          out.push_back(r);
        }
      }
    }
  }
  return out;
}

TEST(AuditorTest, ElasticRestartIsCleanWhenPaddingToTheGlobalBatchIsKnown) {
  // 100 samples padded to 104 = 13 x 8: four repeats, more than 4 ranks pad.
  std::vector<SampleRecord> records = elastic_restart(100, 5);
  EXPECT_TRUE(audit(records, {.dataset_size = 100, .pad_multiple = 8}).clean());
  EXPECT_FALSE(audit(records, {.dataset_size = 100}).clean());
}

// A mixture run as its trace records it: "small" (13) cycles 3:1 beside "large"
// (50), 2 ranks of 6, 3 loader epochs of 5 steps; each sample with its source,
// source epoch, index there and stream.
std::vector<SampleRecord> mixture_trace() {
  const std::vector<std::string> names = {"small", "large"};
  const std::vector<MixtureSegment> history = {
      {0, MixtureSchedule(names, {{0, {1, 3}}}), {}}};
  std::vector<SampleRecord> out;
  for (std::uint32_t rank = 0; rank < 2; ++rank) {
    const MixtureSampler order(names, {13, 50}, history, 60, 6, 2, rank, 9);
    for (std::uint32_t epoch = 0; epoch < 3; ++epoch) {
      for (std::uint64_t k = 0; k < 5; ++k) {
        const std::vector<MixtureSample> step = order.global_batch(epoch * 5 + k);
        for (std::size_t i = rank * 6; i < (rank + 1) * 6; ++i) {
          const MixtureSample& m = step[i];
          SampleRecord r{.rank = rank, .epoch = epoch, .batch = k, .index = m.index};
          r.rng = mixture_sample_stream(9, source_key(names[m.source]), m.epoch, m.index)
                      .fingerprint();
          r.source = names[m.source];
          r.source_epoch = static_cast<std::uint32_t>(m.epoch);
          out.push_back(r);
        }
      }
    }
  }
  return out;
}

TEST(AuditorTest, AMixtureIsAuditedWithinEachSourcesEpochs) {
  const std::vector<SampleRecord> records = mixture_trace();
  const AuditOptions sized{.source_sizes = {{"small", 13}, {"large", 50}}};
  EXPECT_TRUE(audit(records).clean()) << report_text(audit(records));
  // Every source epoch but each source's last is whole; the last is partial by
  // design and is no gap.
  EXPECT_TRUE(audit(records, sized).clean()) << report_text(audit(records, sized));
  // Read as the loader's epochs, the small source's cycles would be repeats.
  std::vector<SampleRecord> plain = records;
  for (SampleRecord& r : plain) {
    r.index += r.source == "large" ? 13 : 0;
    r.source.clear();
  }
  EXPECT_FALSE(audit(plain).clean());
}

TEST(AuditorTest, AMixtureSampleRepeatedWithinItsSourceEpochIsAFindingNamingTheSource) {
  std::vector<SampleRecord> records = mixture_trace();
  // A small-source sample of rank 0 read again on rank 1 in the same source epoch.
  const auto small = std::find_if(
      records.begin(), records.end(),
      [](const SampleRecord& r) { return r.source == "small" && r.rank == 0; });
  SampleRecord again = *small;
  again.rank = 1;
  again.rng ^= 1;  // another stream, as a loader keyed wrongly would give
  records.push_back(again);
  Report r = audit(records);
  EXPECT_EQ(kinds(r), (Kinds{{"rank_batch_duplicate", 1}})) << report_text(r);
  const Example& e = r.findings.at(0).examples.at(0);
  EXPECT_EQ(e.sample.source, "small");
  EXPECT_EQ(e.sample.epoch, small->source_epoch);
  EXPECT_NE(report_json(r).dump().find("\"source_epoch\""), std::string::npos);
  // With the sizes, still one finding, not a coverage repeat besides.
  const AuditOptions sized{.source_sizes = {{"small", 13}, {"large", 50}}};
  EXPECT_EQ(kinds(audit(records, sized)), (Kinds{{"rank_batch_duplicate", 1}}))
      << report_text(audit(records, sized));
  // The same sample twice on one rank.
  again.rank = 0;
  records.back() = again;
  EXPECT_EQ(kinds(audit(records)), (Kinds{{"coverage", 1}}))
      << report_text(audit(records));
  EXPECT_EQ(kinds(audit(records, sized)), (Kinds{{"coverage", 1}}))
      << report_text(audit(records, sized));
}

TEST(AuditorTest, AMixturesStepsAreCheckedAgainstItsWeights) {
  std::vector<SampleRecord> records = mixture_trace();
  const MixtureExpectation expected{
      {{0, MixtureSchedule({"small", "large"}, {{0, {1, 3}}}), {}}}, 12, 5};
  Report r = audit(records, {.mixture = expected});
  EXPECT_TRUE(r.clean()) << report_text(r);
  // Under other weights the same steps are off from the first.
  const MixtureExpectation other{
      {{0, MixtureSchedule({"small", "large"}, {{0, {1, 1}}}), {}}}, 12, 5};
  r = audit(records, {.mixture = other});
  ASSERT_EQ(r.findings.size(), 1u) << report_text(r);
  EXPECT_EQ(finding_name(r.findings[0].kind), std::string("mixture_composition"));
  EXPECT_EQ(r.findings[0].examples.at(0).sample.batch, 0u);
  // One large-source sample of step 2 read from the small source instead: 3 + 1 of
  // 12 there, beyond one sample off 1:3.
  for (SampleRecord& rec : records) {
    if (rec.epoch == 0 && rec.batch == 2 && rec.source == "large") {
      rec.source = "small";
      rec.source_epoch = 9;  // its own epoch, so no repeat is found
      rec.index = 12;
      break;
    }
  }
  r = audit(records, {.mixture = expected});
  ASSERT_EQ(r.findings.size(), 1u) << report_text(r);
  const Example& e = r.findings[0].examples.at(0);
  EXPECT_EQ(e.sample.batch, 2u);
  EXPECT_NE(e.note.find("in global steps 0 to 2"), std::string::npos) << e.note;
}

TEST(AuditorTest, AMixtureSourceEpochMissingASampleIsAGapOnlyWhenComplete) {
  std::vector<SampleRecord> records = mixture_trace();
  // Drop the first small-source sample of its epoch 0 (a complete epoch).
  const auto first = std::find_if(
      records.begin(), records.end(),
      [](const SampleRecord& r) { return r.source == "small" && r.source_epoch == 0; });
  const std::uint64_t index = first->index;
  records.erase(first);
  const AuditOptions sized{.source_sizes = {{"small", 13}, {"large", 50}}};
  Report r = audit(records, sized);
  ASSERT_EQ(kinds(r), (Kinds{{"coverage", 1}})) << report_text(r);
  EXPECT_EQ(r.findings[0].examples.at(0).sample.index, index);
  EXPECT_EQ(r.findings[0].examples.at(0).sample.source, "small");
}

TEST(AuditorTest, IndexOutsideTheDatasetIsAnInputError) {
  Auditor a({.dataset_size = 10});
  SampleRecord r;
  r.index = 10;
  try {
    a.add(r);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(
        std::string(e.what()).find("sample index 10 is not below the dataset size 10"),
        std::string::npos)
        << e.what();
  }
  r.index = 3;
  r.rank = kMaxRank + 1;
  EXPECT_THROW(a.add(r), DataError);
}

TEST(AuditorTest, JsonReportHasVerdictSamplesAndFindings) {
  World w{.ranks = 1, .epochs = 1, .mode = SeedingMode::kNaive};
  auto j = report_json(audit(simulate(w)));
  EXPECT_EQ(j["verdict"], "findings");
  EXPECT_EQ(j["samples"], 103);
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["kind"], "worker_rng_duplicate");
  EXPECT_FALSE(j["findings"][0]["hint"].get<std::string>().empty());
  auto ex = j["findings"][0]["examples"][0];
  for (const char* key : {"rank", "epoch", "worker", "batch", "index", "same_as"}) {
    EXPECT_TRUE(ex.contains(key)) << key;
  }
  EXPECT_EQ(report_json(Report{5, {}})["verdict"], "clean");
}

// A stream's trace: each sample at its own position (index), its content hashed.
std::vector<SampleRecord> stream_trace(std::uint32_t workers, std::uint32_t epochs,
                                       bool split) {
  std::vector<SampleRecord> out;
  std::uint64_t position = 0;
  for (std::uint32_t e = 0; e < epochs; ++e) {
    for (std::uint64_t k = 0; k < 6; ++k) {
      for (std::uint32_t w = 0; w < workers; ++w) {
        SampleRecord r;
        r.epoch = e;
        r.worker = w;
        r.batch = k;
        r.index = position++;
        r.rng = r.index + 1;
        r.content = split ? k * workers + w : k;  // unsplit: every worker the same
        out.push_back(r);
      }
    }
  }
  return out;
}

TEST(AuditorTest, AStreamEveryWorkerIteratesWholeRepeatsContent) {
  Report unsplit = audit(stream_trace(3, 2, false));
  EXPECT_EQ(kinds(unsplit), (Kinds{{"content_repeat", 2u * 6 * 2}}))
      << report_text(unsplit);
  const Finding& f = unsplit.findings[0];
  ASSERT_TRUE(f.examples[0].other);
  EXPECT_EQ(f.examples[0].sample.worker, 1u);
  EXPECT_EQ(f.examples[0].other->worker, 0u);
  // Split by worker, each content once per epoch; every epoch trains it again.
  Report split = audit(stream_trace(3, 2, true));
  EXPECT_TRUE(split.clean()) << report_text(split);
}

TEST(AuditorTest, AContentRepeatedAtItsOwnIndexIsLeftToTheIndexFindings) {
  std::vector<SampleRecord> records = stream_trace(1, 1, true);
  SampleRecord padded = records.front();  // padding: index 0 again, on rank 1
  padded.rank = 1;
  records.push_back(padded);
  Report r = audit(records);
  EXPECT_EQ(kinds(r).count("content_repeat"), 0u) << report_text(r);
}

}  // namespace
}  // namespace seedloader::audit
