// seed-audit throughput: 10^7 per-sample records through the detectors, and 10^7
// JSONL trace lines through the parser and the detectors, in lines/s. Records and
// text are generated in chunks with the timer paused: a seedloader-like run of 4
// ranks x 8 workers, batch 32, every state distinct (the audit's worst case for
// memory). Reports the detectors' table bytes per line too.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/common/hash64.h"
#include "tools/seed_audit/auditor.h"
#include "tools/seed_audit/trace_reader.h"

namespace seedloader::audit {
namespace {

constexpr std::uint64_t kLines = 10'000'000;
constexpr std::uint64_t kChunk = 1'000'000;
constexpr std::uint64_t kRanks = 4, kWorkers = 8, kBatch = 32;
constexpr std::uint64_t kPerRankEpoch = 250'000;  // samples; 10 epochs in all

// Line n of the synthetic trace: ranks take interleaved shards, batch k goes to
// worker k % W, and the state is a hash of the line (all distinct).
SampleRecord record(std::uint64_t n) {
  SampleRecord r;
  std::uint64_t per_epoch = kPerRankEpoch * kRanks;
  std::uint64_t in_epoch = n % per_epoch;
  r.epoch = static_cast<std::uint32_t>(n / per_epoch);
  r.rank = static_cast<std::uint32_t>(in_epoch / kPerRankEpoch);
  std::uint64_t pos = in_epoch % kPerRankEpoch;
  r.batch = pos / kBatch;
  r.worker = static_cast<std::uint32_t>(r.batch % kWorkers);
  // A shuffled shard: a bijection on [0, kPerRankEpoch) differing per epoch.
  std::uint64_t shuffled = (pos * 7919 + r.epoch * 104729) % kPerRankEpoch;
  r.index = shuffled * kRanks + r.rank;
  r.rng = tools::mix64(n + 1);
  return r;
}

void BM_AuditRecords(benchmark::State& state) {
  std::vector<SampleRecord> chunk(kChunk);
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    Auditor auditor({.dataset_size = kPerRankEpoch * kRanks});
    for (std::uint64_t start = 0; start < kLines; start += kChunk) {
      state.PauseTiming();
      for (std::uint64_t i = 0; i < kChunk; ++i) chunk[i] = record(start + i);
      state.ResumeTiming();
      for (const SampleRecord& r : chunk) auditor.add(r);
    }
    Report report = auditor.report();
    if (!report.clean()) state.SkipWithError("the synthetic trace should be clean");
    bytes = auditor.bytes();
    benchmark::DoNotOptimize(report);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLines));
  state.counters["lines/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kLines), benchmark::Counter::kIsRate);
  state.counters["table_bytes_per_line"] = static_cast<double>(bytes) / kLines;
}
BENCHMARK(BM_AuditRecords)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_AuditTraceLines(benchmark::State& state) {
  std::string text;
  std::vector<std::size_t> ends;
  for (auto _ : state) {
    Auditor auditor({.dataset_size = kPerRankEpoch * kRanks});
    for (std::uint64_t start = 0; start < kLines; start += kChunk) {
      state.PauseTiming();
      text.clear();
      ends.clear();
      char line[160];
      for (std::uint64_t i = 0; i < kChunk; ++i) {
        SampleRecord r = record(start + i);
        int n = std::snprintf(
            line, sizeof(line),
            "{\"rank\":%u,\"epoch\":%u,\"worker\":%u,\"batch\":%llu,\"index\":%llu,"
            "\"rng\":\"%016llx\"}",
            r.rank, r.epoch, r.worker, static_cast<unsigned long long>(r.batch),
            static_cast<unsigned long long>(r.index),
            static_cast<unsigned long long>(r.rng));
        text.append(line, static_cast<std::size_t>(n));
        ends.push_back(text.size());
      }
      state.ResumeTiming();
      std::size_t begin = 0;
      for (std::size_t end : ends) {
        auditor.add(parse_trace_line(std::string_view(text).substr(begin, end - begin)));
        begin = end;
      }
    }
    Report report = auditor.report();
    if (!report.clean()) state.SkipWithError("the synthetic trace should be clean");
    benchmark::DoNotOptimize(report);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kLines));
  state.counters["lines/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kLines), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AuditTraceLines)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace seedloader::audit
