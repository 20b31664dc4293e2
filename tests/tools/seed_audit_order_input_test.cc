// seed-audit order (and what it shares with trace --expect) against crafted and huge
// input: JSON nested deep, unknown mix: keys, samples_per_epoch near 2^64, skips
// over 10^15 steps, millions of steps printed, files that are not files, and the
// data kinds whose order needs no pixels (imagefolder:, tar:, mix: of them). Each
// is a clear error naming the input, or the right answer, in bounded time and
// memory.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "base/json_depth.h"
#include "seedloader/error.h"
#include "seedloader/ledger.h"
#include "seedloader/mixture_state_json.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/datasets/tar_writer.h"
#include "tools/common/data_spec.h"
#include "tools/common/input_file.h"
#include "tools/common/loader_flags.h"

namespace seedloader {
namespace {

using testing_util::CommandResult;
using testing_util::run_command;

std::string audit(const std::string& args) {
  return std::string(SEEDLOADER_SEED_AUDIT) + " " + args;
}

// Runs `args` with a time limit; stdout and stderr together.
CommandResult order(const std::string& args, int seconds = 30) {
  return run_command("timeout " + std::to_string(seconds) + " " + audit("order " + args) +
                     " 2>&1");
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void expect_refused(const CommandResult& r, const std::vector<std::string>& words) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  for (const std::string& w : words)
    EXPECT_NE(r.out.find(w), std::string::npos) << "'" << w << "' in:\n" << r.out;
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

std::string nested_objects(std::size_t depth) {
  std::string out;
  for (std::size_t i = 0; i < depth; ++i) out += "{\"a\":";
  return out + "1" + std::string(depth, '}');
}

const std::string kMix =
    R"({"sources": {"a": "synthetic:10", "b": "synthetic:20"}, "weights": {"a": 1, "b": 1}})";

TEST(SeedAuditOrderInputTest, JsonNestedTensOfThousandsDeepIsRefusedNamingTheInput) {
  testing_util::TempDir dir;
  const std::string deep = nested_objects(50000);
  // A mix: file and an inline mix: spec.
  write(dir / "mix.json", R"({"sources": )" + deep + R"(, "weights": {"a": 1}})");
  expect_refused(order("--data mix:" + (dir / "mix.json") + " --seed 1 --step 0"),
                 {"--data mix:" + (dir / "mix.json"), "nested deeper than 64"});
  write(dir / "inline.txt",
        R"(mix:{"sources": {"a": "synthetic:10"}, "weights": {"a": 1}, "x": )" +
            nested(50000) + "}");
  expect_refused(
      order("--data \"$(cat " + (dir / "inline.txt") + ")\" --seed 1 --step 0"),
      {"--data mix:{...}", "nested deeper than 64"});
  // A --mixture state: its history, its sources.
  write(dir / "mix_ok.json", kMix);
  write(dir / "state_history.json",
        R"({"step": 0, "samples_per_epoch": 30, "epoch_first_step": 0, "sources": {},)"
        R"( "history": )" +
            nested(50000) + "}");
  write(dir / "state_sources.json",
        R"({"step": 0, "samples_per_epoch": 30, "epoch_first_step": 0, "sources": )" +
            deep + R"(, "history": []})");
  for (const std::string state : {"state_history.json", "state_sources.json"}) {
    expect_refused(order("--data mix:" + (dir / "mix_ok.json") + " --mixture " +
                         (dir / state) + " --seed 1 --step 0"),
                   {"--mixture " + (dir / state), "nested deeper than 64"});
    // trace --mixture reads the same state.
    write(dir / "trace.jsonl", "");
    const CommandResult r =
        run_command(audit("trace " + (dir / "trace.jsonl") +
                          " --global-batch 4 --mixture " + (dir / state) + " 2>&1"));
    expect_refused(r, {"--mixture " + (dir / state), "nested deeper than 64"});
  }
  // Ordinary nesting still parses, to the bound and no further.
  using Json = nlohmann::json;
  EXPECT_NO_THROW(parse_json<Json>(nested(kMaxJsonDepth)));
  EXPECT_THROW(parse_json<Json>(nested(kMaxJsonDepth + 1)), Json::exception);
  EXPECT_THROW(parse_mixture_state("state", nested(100000)), DataError);
}

TEST(SeedAuditOrderInputTest, ACountThatIsNoUnsignedIntegerIsRefusedNamingTheState) {
  const std::string good =
      R"({"step": 12, "samples_per_epoch": 60, "epoch_first_step": 10, "sources": )"
      R"({"a": {"size": 13, "epoch": 2, "consumed": 36, "epoch_first_count": 30}}, )"
      R"("history": [[0, ["a"], [[0, [1.0]]], [], false], [10, ["a"], [[0, [1.0]]], [30], true]]})";
  EXPECT_NO_THROW(parse_mixture_state("state.json", good));
  // A float beyond 2^64 (undefined behaviour to convert), a negative count (it
  // would wrap), a fraction, a string: each where a count is read.
  for (const std::string& bad : {"1.1e20", "-1", "2.5", "\"36\""}) {
    for (const std::string& field :
         {R"("consumed": 36)", R"("step": 12)", R"([10, ["a"])", R"([30])"}) {
      std::string text = good;
      const std::size_t at = text.find(field);
      ASSERT_NE(at, std::string::npos) << field;
      std::string replaced = field;
      const std::size_t digits = replaced.find_first_of("0123456789");
      const std::size_t end = replaced.find_first_not_of("0123456789", digits);
      replaced.replace(digits, end - digits, bad);
      text.replace(at, field.size(), replaced);
      try {
        parse_mixture_state("state.json", text);
        ADD_FAILURE() << "accepted: " << text;
      } catch (const DataError& e) {
        EXPECT_NE(std::string(e.what()).find("state.json"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("non-negative integer"), std::string::npos)
            << e.what();
      }
    }
  }
}

TEST(SeedAuditOrderInputTest, AnUnknownMixKeyIsRefusedNamingItAndTheKeys) {
  for (const std::string key : {"samples_per_epok", "interpolated"}) {
    const std::string spec =
        R"({"sources": {"a": "synthetic:10"}, "weights": {"a": 1}, ")" + key + R"(": 5})";
    expect_refused(order("--data 'mix:" + spec + "' --seed 1 --step 0"),
                   {"--data mix:{...}", "unknown key '" + key + "'",
                    "sources, weights, samples_per_epoch, interpolate"});
    try {
      tools::parse_mix_spec("where", spec);
      FAIL() << key;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("where: unknown key '" + key + "'"),
                std::string::npos)
          << e.what();
    }
  }
  const tools::MixSpec mix = tools::parse_mix_spec(
      "where", R"({"sources": {"b": "synthetic:3", "a": "synthetic:4"},)"
               R"( "weights": [[0, {"a": 1, "b": 2}], [9, {"a": 0, "b": 1}]],)"
               R"( "samples_per_epoch": 12, "interpolate": true})");
  EXPECT_EQ(mix.names, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(mix.sources, (std::vector<std::string>{"synthetic:3", "synthetic:4"}));
  ASSERT_EQ(mix.points.size(), 2u);
  EXPECT_EQ(mix.points[1].step, 9u);
  EXPECT_EQ(mix.points[0].weights, (std::vector<double>{2, 1}));
  EXPECT_TRUE(mix.interpolate);
  EXPECT_EQ(mix.samples_per_epoch, 12u);
}

TEST(SeedAuditOrderInputTest, SamplesPerEpochNear2To64IsRefusedNotAnEmptyEpoch) {
  const std::string spec =
      R"('mix:{"sources": {"a": "synthetic:10"}, "weights": {"a": 1},)"
      R"( "samples_per_epoch": 18446744073709551615}')";
  // Batch 32: 2^59 steps of 32 would be 2^64 samples.
  expect_refused(order("--data " + spec + " --seed 1 --step 0"),
                 {"samples_per_epoch 18446744073709551615", "2^64 - 1 samples"});
  // Batch 3: (2^64 - 1) / 3 steps, an epoch no machine holds: refused, naming it.
  expect_refused(order("--data " + spec + " --seed 1 --step 0 --batch-size 3"),
                 {"too large to hold", "samples_per_epoch"});
}

TEST(SeedAuditOrderInputTest, ASkipOf10To15StepsIsThreeRangesAndReturnsAtOnce) {
  // The ordinary span gives what it always gave; the huge one marks every step of
  // every epoch it covers, in a few milliseconds.
  const std::string config = "--size 64 --seed 1 --batch-size 4 --json - --steps 0:16";
  CommandResult r = order(config + " --epoch 2 --skip-steps 30:40");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<std::uint64_t> skipped;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["skipped"].get<bool>() && j["slot"] == 0) skipped.push_back(j["step"]);
  }
  EXPECT_EQ(skipped, (std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (const std::string epoch : {"0", "7", "62499999999999"}) {
    r = order(config + " --epoch " + epoch + " --skip-steps 1:1000000000000000", 10);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::istringstream all(r.out);
    std::size_t n = 0, marked = 0;
    for (std::string line; std::getline(all, line); ++n) {
      const auto j = nlohmann::json::parse(line);
      const bool first = epoch == "0" && j["step"] == 0;
      marked += j["skipped"].get<bool>() ? 1 : 0;
      EXPECT_EQ(j["skipped"].get<bool>(), !first) << line;
    }
    EXPECT_EQ(n, 64u);
    EXPECT_EQ(marked, epoch == "0" ? 60u : 64u);
  }
}

// The peak resident memory of `command` (run by /bin/sh), in KiB, and its exit code.
std::pair<long, int> peak_memory(const std::string& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

TEST(SeedAuditOrderInputTest, MillionsOfStepsStreamInTheMemoryOfTheOrder) {
  if (kSanitized) GTEST_SKIP() << "a sanitizer's quarantine keeps what was freed";
  testing_util::TempDir dir;
  // 3 million entries: held whole they took about 150 bytes each (450 MB); streamed,
  // the process holds the epoch's order (24 MB) and one entry.
  const std::string out = dir / "order.jsonl";
  const auto [kib, code] = peak_memory(
      audit("order --size 3000000 --seed 1 --batch-size 1 --workers 0 --steps 0:3000000 "
            "--json " +
            out));
  ASSERT_EQ(code, 0);
  EXPECT_LT(kib, 200 * 1024) << "peak " << kib / 1024 << " MiB";
  std::ifstream in(out);
  std::size_t lines = 0;
  std::string line, last;
  while (std::getline(in, line)) {
    ++lines;
    last = line;
  }
  EXPECT_EQ(lines, 3000000u);
  EXPECT_EQ(nlohmann::json::parse(last)["step"], 2999999);
  // The text form streams too.
  const auto [text_kib, text_code] = peak_memory(
      audit("order --size 3000000 --seed 1 --batch-size 1 --steps 0:3000000 >/dev/null"));
  ASSERT_EQ(text_code, 0);
  EXPECT_LT(text_kib, 200 * 1024) << "peak " << text_kib / 1024 << " MiB";
}

TEST(SeedAuditOrderInputTest, AFlagsFileThatIsNoRegularFileIsRefusedNamingFlagAndPath) {
  testing_util::TempDir dir;
  std::filesystem::create_directory(dir / "folder");
  write(dir / "mix_ok.json", kMix);
  const std::string base = "--seed 1 --step 0 --seeding sample ";
  for (const std::string path : {dir / "folder", std::string("/dev/zero")}) {
    const std::string kind = path == "/dev/zero" ? "a character device" : "a directory";
    expect_refused(order(base + "--data synthetic:10 --skip-samples " + path),
                   {"--skip-samples " + path + ": " + kind});
    expect_refused(order(base + "--data mix:" + path),
                   {"--data mix:" + path + ": " + kind});
    expect_refused(
        order(base + "--data mix:" + (dir / "mix_ok.json") + " --mixture " + path),
        {"--mixture " + path + ": " + kind});
  }
  // Larger than the bound (sparse files: nothing is written or read).
  const std::string big_list = dir / "big.txt", big_json = dir / "big.json";
  write(big_list, "");
  write(big_json, "");
  std::filesystem::resize_file(big_list, tools::kMaxSampleListBytes + 1);
  std::filesystem::resize_file(big_json, tools::kMaxJsonFileBytes + 1);
  expect_refused(order(base + "--data synthetic:10 --skip-samples " + big_list),
                 {"--skip-samples " + big_list + ": larger than the 256 MiB"});
  expect_refused(order(base + "--data mix:" + big_json),
                 {"--data mix:" + big_json + ": larger than the 64 MiB"});
  expect_refused(
      order(base + "--data mix:" + (dir / "mix_ok.json") + " --mixture " + big_json),
      {"--mixture " + big_json + ": larger than the 64 MiB"});
  // A FIFO is refused without waiting for a writer.
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  expect_refused(order(base + "--data synthetic:10 --skip-samples " + (dir / "fifo"), 10),
                 {"--skip-samples " + (dir / "fifo") + ": a FIFO"});
  // A list that is a file still reads as one.
  write(dir / "list.txt", "3 # a comment\n\n7\r\n");
  EXPECT_EQ(tools::read_sample_list("--skip-samples", dir / "list.txt"),
            (std::vector<std::uint64_t>{3, 7}));
  try {
    tools::read_input_file("--flag x", dir / "list.txt", 4);
    FAIL() << "a file over its bound";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--flag x: larger than the 4 bytes"),
              std::string::npos)
        << e.what();
  }
}

// An ImageFolder of `n` files over 3 classes (the order reads no pixel: the files
// are not images).
void write_image_folder(const std::string& root, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string cls = root + "/c" + std::to_string(i % 3);
    std::filesystem::create_directories(cls);
    write(cls + "/" + std::to_string(i) + ".jpg", "not decoded");
  }
}

// Tar shards of the given sample counts, shard-NNN.tar.
void write_shards(const std::string& dir, const std::vector<int>& counts) {
  std::filesystem::create_directories(dir);
  int k = 0;
  for (std::size_t s = 0; s < counts.size(); ++s) {
    std::vector<testing::Member> members;
    for (int i = 0; i < counts[s]; ++i, ++k) {
      const std::string key = std::to_string(100000 + k);
      members.push_back({testing::Member::kFile, key + ".jpg", {1, 2, 3}, ""});
      members.push_back({testing::Member::kFile, key + ".cls", {'1'}, ""});
    }
    char name[32];
    std::snprintf(name, sizeof name, "/shard-%03zu.tar", s);
    testing::write_tar(dir + name, members);
  }
}

std::string stdout_of(const std::string& args) {
  const CommandResult r = run_command(audit("order " + args));
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.out;
  return r.out;
}

TEST(SeedAuditOrderInputTest, ImageFolderTarAndTheirMixtureNeedNoTransform) {
  testing_util::TempDir dir;
  write_image_folder(dir / "images", 22);
  write_shards(dir / "shards", {5, 9, 3, 7});
  const std::string images = "imagefolder:" + (dir / "images");
  const std::string tar = "tar:" + (dir / "shards") + "/shard-{000..003}.tar";
  const std::string flags =
      " --seed 3 --batch-size 4 --world-size 2 --shuffle --steps 0:3 "
      "--seeding sample --json -";
  // The order of a folder of 22 images is that of 22 samples.
  EXPECT_EQ(stdout_of("--data " + images + flags), stdout_of("--size 22" + flags));
  // Shards read in a shard order: the ledger over their sizes.
  const std::string sharded = flags + " --order shards --partition elastic";
  const std::string got = stdout_of("--data '" + tar + "'" + sharded);
  LedgerQuery q;
  q.options.batch_size = 4;
  q.options.world_size = 2;
  q.options.shuffle = true;
  q.options.order = ShuffleOrder::kShards;
  q.options.partition = Partition::kElastic;
  q.options.seeding = SeedScope::kSample;
  q.dataset_size = 24;
  q.shard_sizes = {5, 9, 3, 7};
  q.seed = 3;
  q.first_step = 0;
  q.end_step = 3;
  std::istringstream lines(got);
  std::string line;
  for (const LedgerEntry& e : ledger(q)) {
    ASSERT_TRUE(std::getline(lines, line));
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["index"], e.index) << line;
    EXPECT_EQ(j["step"], e.step) << line;
    EXPECT_EQ(j["rank"], e.rank) << line;
  }
  EXPECT_FALSE(std::getline(lines, line)) << line;
  // A mixture of them, as docs/datasets.md writes one: its order is that of any
  // sources of the same names and sizes.
  const std::string mix = R"({"sources": {"web": ")" + tar + R"(", "curated": ")" +
                          images +
                          R"("}, "weights": [[0, {"web": 3, "curated": 1}],)"
                          R"( [4, {"web": 1, "curated": 1}]]})";
  write(dir / "mix.json", mix);
  const std::string same =
      R"('mix:{"sources": {"web": "synthetic:24", "curated": "synthetic:22"},)"
      R"( "weights": [[0, {"web": 3, "curated": 1}], [4, {"web": 1, "curated": 1}]]}')";
  const std::string elastic = flags + " --partition elastic";
  EXPECT_EQ(stdout_of("--data mix:" + (dir / "mix.json") + elastic),
            stdout_of("--data " + same + elastic));
  // trace --expect takes them too.
  std::ofstream trace(dir / "trace.jsonl");
  std::istringstream entries(stdout_of("--data " + images + flags));
  while (std::getline(entries, line)) {
    const auto j = nlohmann::json::parse(line);
    trace << nlohmann::json{{"rank", j["rank"]},     {"epoch", j["epoch"]},
                            {"worker", j["worker"]}, {"batch", j["step"]},
                            {"index", j["index"]},   {"rng", j["fingerprint"].dump()}}
                 .dump()
          << "\n";
  }
  trace.close();
  const CommandResult r = run_command(
      audit("trace " + (dir / "trace.jsonl") + " --expect \"--data " + images +
            " --seed 3 --batch-size 4 --world-size 2 --shuffle --seeding sample\" 2>&1"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("transform"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace seedloader
