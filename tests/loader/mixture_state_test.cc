// A mixture loader's saved state (mixture_dataset.h) and its JSON
// (mixture_state_json.h): the format Python's state_dict()["mixture"], ddp-train's
// checkpoints and seed-audit --mixture share, read back to the same state; a resume
// computed from an order's shape (what Python binds) equal to the data set's; and
// every refusal naming what is wrong.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"
#include "seedloader/mixture_state_json.h"
#include "seedloader/stream_probe_dataset.h"
#include "tests/common/error_of.h"

namespace seedloader {
namespace {

constexpr std::uint64_t kSeed = 77;
constexpr std::uint64_t kGlobal = 12;  // 5 steps of 12 an epoch of 60 samples

std::shared_ptr<const Dataset> probe(std::uint64_t n) {
  return std::make_shared<StreamProbeDataset>(n, 2);
}

// "small" (13 samples) beside "large" (50), under `points`.
MixtureDataset mixture(std::vector<WeightPoint> points,
                       std::uint64_t samples_per_epoch = 60) {
  return MixtureDataset({{"small", probe(13)}, {"large", probe(50)}},
                        MixtureSchedule({"small", "large"}, std::move(points)),
                        samples_per_epoch);
}

std::vector<WeightPoint> staged() { return {{0, {1, 3}}, {7, {1, 1}}}; }

// Whether `a` and `b` are the same history: steps, schedules and counts.
bool same_history(const std::vector<MixtureSegment>& a,
                  const std::vector<MixtureSegment>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].from_step != b[i].from_step || !a[i].schedule.same_as(b[i].schedule) ||
        a[i].consumed != b[i].consumed)
      return false;
  return true;
}

bool same_known(const std::vector<MixturePoint>& a, const std::vector<MixturePoint>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].step != b[i].step || a[i].consumed != b[i].consumed) return false;
  return true;
}

using testing_util::error_of;

TEST(MixtureStateTest, TheJsonIsTheFormatStateDictsAndCheckpointsKeep) {
  const MixtureDataset ds = mixture(staged());
  const MixtureSampler order(ds, kGlobal, 1, 0, kSeed);
  const std::vector<std::uint64_t> first = order.consumed_at(10);
  const std::vector<std::uint64_t> at = order.consumed_at(13);
  auto n = [](std::uint64_t v) { return std::to_string(v); };
  const std::string want =
      R"({"step":13,"samples_per_epoch":60,"epoch_first_step":10,"sources":{)"
      R"("small":{"size":13,"epoch":)" +
      n(at[0] / 13) + R"(,"consumed":)" + n(at[0]) + R"(,"epoch_first_count":)" +
      n(first[0]) +
      R"(},)"
      R"("large":{"size":50,"epoch":)" +
      n(at[1] / 50) + R"(,"consumed":)" + n(at[1]) + R"(,"epoch_first_count":)" +
      n(first[1]) +
      R"(}},)"
      R"("history":[[0,["small","large"],[[0,[1.0,3.0]],[7,[1.0,1.0]]],[],false]]})";
  EXPECT_EQ(mixture_state_json(mixture_state(order, 10, 13)), want);
  EXPECT_EQ(at[0] + at[1], 13 * kGlobal);
}

TEST(MixtureStateTest, AStateReadBackFromItsJsonIsTheSameState) {
  const MixtureDataset before = mixture(staged());
  const MixtureState saved = mixture_state(before, kGlobal, kSeed, 10, 13);
  // Resumed once with new weights, so the history has two segments and counts.
  const MixtureDataset after =
      resumed_mixture(mixture({{0, {2, 1}}}), saved, kGlobal, kSeed);
  const MixtureState state = mixture_state(after, kGlobal, kSeed, 15, 17);
  const std::string text = mixture_state_json(state);
  const MixtureState read = parse_mixture_state("state.json", text);
  EXPECT_EQ(read.step, state.step);
  EXPECT_EQ(read.epoch_first_step, state.epoch_first_step);
  EXPECT_EQ(read.samples_per_epoch, state.samples_per_epoch);
  EXPECT_EQ(read.names, state.names);
  EXPECT_EQ(read.sizes, state.sizes);
  EXPECT_EQ(read.consumed, state.consumed);
  EXPECT_EQ(read.epoch_first_counts, state.epoch_first_counts);
  ASSERT_EQ(read.history.size(), 2u);
  EXPECT_TRUE(same_history(read.history, state.history));
  EXPECT_EQ(mixture_state_json(read), text);
}

TEST(MixtureStateTest, AResumeFromAnOrdersShapeIsTheResumeOfItsDataSet) {
  const MixtureState saved = mixture_state(mixture(staged()), kGlobal, kSeed, 10, 13);
  // New weights and a source added in front.
  const MixtureDataset next(
      {{"extra", probe(7)}, {"small", probe(13)}, {"large", probe(50)}},
      MixtureSchedule({"extra", "small", "large"}, {{0, {1, 1, 1}}}), 60);
  const MixtureDataset resumed = resumed_mixture(next, saved, kGlobal, kSeed);
  // The order of one rank of three: only G counts.
  const MixtureSampler order(next, kGlobal / 3, 3, 2, kSeed);
  const MixtureResume r = resumed_history(order, saved, 2);
  EXPECT_TRUE(same_history(r.history, resumed.history()));
  EXPECT_TRUE(same_known(r.known, resumed.known()));
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[1].from_step, 13u);
  EXPECT_EQ(r.history[1].consumed[0], 0u) << "the added source starts at 0";
  EXPECT_EQ(r.known[0].step, 10u);
  EXPECT_EQ(r.known[1].step, 13u);
  // The same weights: the saved history goes on as it was.
  const MixtureResume same =
      resumed_history(MixtureSampler(mixture(staged()), kGlobal, 1, 0, kSeed), saved);
  EXPECT_TRUE(same_history(same.history, saved.history));
  // A saved index moves with its source, by the order as by the data set.
  for (std::uint64_t i = 0; i < 63; ++i)
    EXPECT_EQ(moved_index(saved, order, i), moved_index(saved, next, i)) << i;
  EXPECT_EQ(moved_index(saved, order, 0), 7u);
}

TEST(MixtureStateTest, AStateOfAnotherMixtureOrPositionIsRefusedNamingIt) {
  const MixtureState saved = mixture_state(mixture(staged()), kGlobal, kSeed, 10, 13);
  const MixtureSampler order(mixture(staged()), kGlobal, 1, 0, kSeed);
  auto resume = [&](const MixtureState& s, std::optional<std::uint64_t> epoch) {
    return error_of([&] { resumed_history(order, s, epoch); });
  };
  EXPECT_EQ(resume(saved, 2), "(no error)");
  EXPECT_THROW(resumed_history(order, saved, 3), ConfigError);
  EXPECT_NE(resume(saved, 3).find("epoch begins at step 10, but its epoch 3 of 5 steps "
                                  "begins at step 15"),
            std::string::npos)
      << resume(saved, 3);
  EXPECT_NE(resume(saved, std::uint64_t{1} << 62).find("begins at step past 2^64 - 1"),
            std::string::npos);
  MixtureState lied = saved;
  ++lied.consumed[0];
  --lied.consumed[1];
  const std::string counts = resume(lied, std::nullopt);
  EXPECT_NE(counts.find("counts at step 13 are [" + std::to_string(lied.consumed[0]) +
                        ", " + std::to_string(lied.consumed[1]) +
                        "], but its history "
                        "gives [" +
                        std::to_string(saved.consumed[0])),
            std::string::npos)
      << counts;
  EXPECT_NE(counts.find("does not belong together"), std::string::npos);
  const MixtureSampler longer(mixture(staged(), 72), kGlobal, 1, 0, kSeed);
  EXPECT_NE(error_of([&] {
              resumed_history(longer, saved);
            }).find("samples_per_epoch 60, this mixture has 72"),
            std::string::npos);
  const MixtureSampler resized(
      MixtureDataset({{"small", probe(14)}, {"large", probe(50)}},
                     MixtureSchedule({"small", "large"}, staged()), 60),
      kGlobal, 1, 0, kSeed);
  EXPECT_NE(error_of([&] {
              resumed_history(resized, saved);
            }).find("'small' had 13 samples when the state was saved, it has 14 now"),
            std::string::npos);
  const MixtureSampler gone(
      MixtureDataset({{"large", probe(50)}}, MixtureSchedule({"large"}, {{0, {1}}}), 60),
      kGlobal, 1, 0, kSeed);
  EXPECT_NE(error_of([&] {
              resumed_history(gone, saved);
            }).find("source 'small' is not in this mixture"),
            std::string::npos);
  EXPECT_NE(error_of([&] { moved_index(saved, gone, 3); }).find("'small'"),
            std::string::npos);
}

TEST(MixtureStateTest, MalformedJsonIsADataErrorNamingWhereAndWhat) {
  const std::string good =
      mixture_state_json(mixture_state(mixture(staged()), kGlobal, kSeed, 10, 13));
  auto read = [](const std::string& text) {
    return error_of([&] { parse_mixture_state("state.json", text); });
  };
  EXPECT_THROW(parse_mixture_state("state.json", "{"), DataError);
  EXPECT_EQ(read(good), "(no error)");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  for (const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
           {"{", "state.json: the mixture state is malformed"},
           {with(R"("step":13)", R"("step":-13)"), "non-negative integer"},
           {with(R"("size":13)", R"("size":0)"),
            "state.json: the mixture state's source "
            "'small' has size 0"},
           {with(R"(,[],false]])", "]]"),
            "state.json: the mixture "
            "history's row 0 is not"},
           {with(R"(,"history":)", R"(,"history":{"a":1},"x":)"),
            "state.json: the mixture history is not an array"},
           {with(R"([0,[1.0,3.0]],[7,)", R"([7,[1.0,3.0]],[0,)"),
            "state.json: the mixture history: "}}) {
    const std::string got = read(text);
    EXPECT_NE(got.find(what), std::string::npos) << text << "\n" << got;
  }
}

}  // namespace
}  // namespace seedloader
