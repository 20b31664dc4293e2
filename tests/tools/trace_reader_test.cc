// Trace lines: the documented shape parses; every malformed line is rejected with
// the problem named, and read_trace adds the file and line number.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "seedloader/error.h"
#include "tests/common/temp_dir.h"
#include "tools/common/hash64.h"
#include "tools/seed_audit/trace_reader.h"

namespace seedloader::audit {
namespace {

std::string problem(const std::string& line) {
  try {
    parse_trace_line(line);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceReaderTest, ParsesEveryField) {
  SampleRecord r = parse_trace_line(
      R"( {"rank":1, "epoch":2,"worker":3,"batch":4,"index":5,"rng":"ab","content":"c",)"
      R"("aug":{"crop":[1,2]},"extra":[1,{"x":"}"}]} )");
  EXPECT_EQ(r.rank, 1u);
  EXPECT_EQ(r.epoch, 2u);
  EXPECT_EQ(r.worker, 3u);
  EXPECT_EQ(r.batch, 4u);
  EXPECT_EQ(r.index, 5u);
  EXPECT_EQ(r.rng, tools::hash_bytes("ab"));
  EXPECT_EQ(r.content, tools::hash_bytes("c"));
  EXPECT_EQ(r.aug, R"({"crop":[1,2]})");
}

TEST(TraceReaderTest, AMixturesSampleNamesItsSourceAndTheSourcesEpoch) {
  SampleRecord r = parse_trace_line(
      R"({"rank":0,"epoch":1,"worker":0,"batch":2,"source":"w\u0065b","source_epoch":7,)"
      R"("index":3,"rng":"ab"})");
  EXPECT_EQ(r.source, "web");
  EXPECT_EQ(r.source_epoch, 7u);
  EXPECT_EQ(r.index, 3u);
  EXPECT_TRUE(parse_trace_line(
                  R"({"rank":0,"epoch":1,"worker":0,"batch":0,"index":3,"rng":"ab"})")
                  .source.empty());
  EXPECT_THROW(
      parse_trace_line(
          R"({"rank":0,"epoch":1,"worker":0,"batch":0,"index":3,"rng":"ab","source":""})"),
      DataError);
  EXPECT_THROW(
      parse_trace_line(
          R"({"rank":0,"epoch":1,"worker":0,"batch":0,"index":3,"rng":"ab","source":4})"),
      DataError);
  // One without the other would file every cycle of a source under its epoch 0.
  EXPECT_THROW(
      parse_trace_line(
          R"({"rank":0,"epoch":1,"worker":0,"batch":0,"index":3,"rng":"ab","source":"a"})"),
      DataError);
  EXPECT_THROW(
      parse_trace_line(
          R"({"rank":0,"epoch":1,"worker":0,"batch":0,"index":3,"rng":"ab","source_epoch":2})"),
      DataError);
}

TEST(TraceReaderTest, EscapedAndPlainSpellingsOfOneStringAreOneState) {
  auto line = [](const std::string& rng) {
    return R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":)" + rng + "}";
  };
  EXPECT_EQ(parse_trace_line(line(R"("A\u0042")")).rng,
            parse_trace_line(line(R"("AB")")).rng);
  EXPECT_NE(parse_trace_line(line(R"("AB")")).rng, parse_trace_line(line(R"("AC")")).rng);
}

TEST(TraceReaderTest, MalformedLinesNameTheProblem) {
  const std::string ok = R"("epoch":0,"worker":0,"batch":0,"index":0,"rng":"x")";
  EXPECT_EQ(problem(R"({"rank":0,)" + ok + "}"), "");
  EXPECT_EQ(problem("{" + ok + "}"), R"(missing "rank")");
  EXPECT_EQ(problem(R"({"rank":-1,)" + ok + "}"),
            R"("rank" must be a non-negative integer)");
  EXPECT_EQ(problem(R"({"rank":1.5,)" + ok + "}"),
            R"("rank" must be a non-negative integer)");
  EXPECT_EQ(problem(R"({"rank":0,"rank":1,)" + ok + "}"), R"(duplicate key "rank")");
  EXPECT_EQ(problem(R"({"rank":0,)" + ok + "} x"),
            "unexpected text after the closing '}'");
  EXPECT_EQ(problem(R"({"rank":0,)" + ok), "expected ',' or '}'");
  EXPECT_EQ(problem("[1,2]"), "expected '{' at the start of the line");
  EXPECT_EQ(problem(R"({"rank":99999999,)" + ok + "}"),
            R"("rank" 99999999 exceeds 65534)");
  EXPECT_EQ(problem(R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":7})"),
            R"("rng" must be a string)");
  EXPECT_EQ(problem(R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"x)"),
            "unterminated string");
  // A key the reader does not know still holds JSON, or the line is refused.
  EXPECT_EQ(problem(R"({"rank":0,"note":this is not json,)" + ok + "}"),
            "a value that is not JSON: this is not json");
  EXPECT_EQ(problem(R"({"rank":0,"aug":[1,,2],)" + ok + "}"),
            "a value that is not JSON: [1,,2]");
  EXPECT_EQ(problem(R"({"rank":0,"note":{"a":[true,null,-1.5e3]},)" + ok + "}"), "");
}

TEST(TraceReaderTest, ADeclaredSkipNeedsNoWorkerAndNoRandomState) {
  const SampleRecord r =
      parse_trace_line(R"({"rank":1,"epoch":2,"batch":4,"index":5,"skipped":true})");
  EXPECT_TRUE(r.skipped);
  EXPECT_FALSE(r.has_rng);
  EXPECT_EQ(r.index, 5u);
  EXPECT_EQ(r.batch, 4u);
  const std::string ok = R"("rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"x")";
  const SampleRecord trained = parse_trace_line("{" + ok + R"(,"skipped":false})");
  EXPECT_FALSE(trained.skipped);
  EXPECT_TRUE(trained.has_rng);
  // A trained sample still needs every field; a skipped one its place.
  EXPECT_EQ(problem(R"({"rank":0,"epoch":0,"batch":0,"index":0,"skipped":false})"),
            R"(missing "worker")");
  EXPECT_EQ(problem(R"({"rank":0,"epoch":0,"index":0,"skipped":true})"),
            R"(missing "batch")");
  EXPECT_EQ(problem("{" + ok + R"(,"skipped":1})"), R"("skipped" must be true or false)");
  EXPECT_EQ(problem("{" + ok + R"(,"skipped":true,"skipped":true})"),
            R"(duplicate key "skipped")");
}

TEST(TraceReaderTest, RunIsOptionalAndDefaultsToTheFirstRun) {
  const std::string ok = R"("rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"x")";
  EXPECT_EQ(parse_trace_line("{" + ok + "}").run, 0u);
  EXPECT_EQ(parse_trace_line("{" + ok + R"(,"run":3})").run, 3u);
  EXPECT_EQ(problem("{" + ok + R"(,"run":-1})"),
            R"("run" must be a non-negative integer)");
  EXPECT_EQ(problem("{" + ok + R"(,"run":"1"})"),
            R"("run" must be a non-negative integer)");
  EXPECT_EQ(problem("{" + ok + R"(,"run":1.0})"),
            R"("run" must be a non-negative integer)");
  EXPECT_EQ(problem("{" + ok + R"(,"run":65535})"), R"("run" 65535 exceeds 65534)");
  EXPECT_EQ(problem("{" + ok + R"(,"run":1,"run":2})"), R"(duplicate key "run")");
}

TEST(TraceReaderTest, AMalformedRunNamesFileAndLine) {
  std::string path = testing_util::process_temp_dir() + "trace_reader_run.jsonl";
  {
    std::ofstream f(path);
    f << R"({"run":0,"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"a"})"
      << "\n"
      << R"({"run":null,"rank":0,"epoch":0,"worker":0,"batch":0,"index":1,"rng":"b"})"
      << "\n";
  }
  try {
    read_trace(path, [](const SampleRecord&) {});
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + R"(:2: "run" must be a non-negative integer)");
  }
  std::remove(path.c_str());
}

TEST(TraceReaderTest, ReadTraceNamesFileAndLineAndSkipsBlankLines) {
  std::string path = testing_util::process_temp_dir() + "trace_reader_test.jsonl";
  {
    std::ofstream f(path);
    f << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"a"})"
      << "\n\n"
      << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":1,"rng":"b"})"
      << "\n"
      << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":1})"
      << "\n";
  }
  std::vector<std::uint64_t> seen;
  try {
    read_trace(path, [&](const SampleRecord& r) { seen.push_back(r.index); });
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), path + R"(:4: missing "rng")");
  }
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_THROW(read_trace(path + ".absent", [](const SampleRecord&) {}), DataError);
  std::remove(path.c_str());
}

TEST(TraceReaderTest, LinesLongerThanOneReadAreJoined) {
  std::string path = testing_util::process_temp_dir() + "trace_reader_long.jsonl";
  std::string aug(3 << 20, 'x');  // crosses the 1 MiB read buffer
  {
    std::ofstream f(path);
    for (int i = 0; i < 2; ++i) {
      f << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":)" << i
        << R"(,"rng":"s","aug":")" << aug << "\"}\n";
    }
  }
  std::vector<std::size_t> aug_sizes;
  EXPECT_EQ(
      read_trace(path, [&](const SampleRecord& r) { aug_sizes.push_back(r.aug.size()); }),
      2u);
  EXPECT_EQ(aug_sizes, (std::vector<std::size_t>{aug.size(), aug.size()}));
  std::remove(path.c_str());
}

// A line without an end must not be buffered whole: a 2 GB line cost 4 GB.
TEST(TraceReaderTest, ALineBeyondTheCapIsRefusedNamingFileAndLine) {
  std::string path = testing_util::process_temp_dir() + "trace_reader_huge.jsonl";
  {
    std::ofstream f(path);
    f << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":0,"rng":"a"})"
      << "\n";
    f << R"({"rank":0,"epoch":0,"worker":0,"batch":0,"index":1,"rng":"b","aug":")"
      << std::string(kMaxTraceLineBytes + 1, 'x') << "\"}\n";
  }
  std::uint64_t records = 0;
  try {
    read_trace(path, [&](const SampleRecord&) { ++records; });
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: line longer than " +
                                         std::to_string(kMaxTraceLineBytes) +
                                         " bytes (a trace holds one record per line)");
  }
  EXPECT_EQ(records, 1u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace seedloader::audit
