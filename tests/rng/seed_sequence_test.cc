// Known answers from numpy's own test suite (numpy/random/tests/
// test_seed_sequence.py, after O'Neill's C++ reference) and from numpy itself.
#include "seedloader/seed_sequence.h"

#include <gtest/gtest.h>

namespace seedloader {
namespace {

TEST(SeedSequenceTest, MatchesNumpyReferenceData) {
  const std::vector<std::vector<std::uint64_t>> inputs = {
      {3735928559, 195939070, 229505742, 305419896},
      {3668361503, 4165561550, 1661411377, 3634257570},
      {164546577, 4166754639, 1765190214, 1303880213},
      {446610472, 3941463886, 522937693, 1882353782},
      {1864922766, 1719732118, 3882010307, 1776744564},
      {4141682960, 3310988675, 553637289, 902896340},
      {1134851934, 2352871630, 3699409824, 2648159817},
      {1240956131, 3107113773, 1283198141, 1924506131},
      {2669565031, 579818610, 3042504477, 2774880435},
      {2766103236, 2883057919, 4029656435, 862374500},
  };
  const std::vector<std::vector<std::uint32_t>> outputs = {
      {3914649087, 576849849, 3593928901, 2229911004},
      {2240804226, 3691353228, 1365957195, 2654016646},
      {3562296087, 3191708229, 1147942216, 3726991905},
      {1403443605, 3591372999, 1291086759, 441919183},
      {1086200464, 2191331643, 560336446, 3658716651},
      {3249937430, 2346751812, 847844327, 2996632307},
      {2584285912, 4034195531, 3523502488, 169742686},
      {959045797, 3875435559, 1886309314, 359682705},
      {3978441347, 432478529, 3223635119, 138903045},
      {296367413, 4262059219, 13109864, 3283683422},
  };
  const std::vector<std::vector<std::uint64_t>> outputs64 = {
      {2477551240072187391ull, 9577394838764454085ull},
      {15854241394484835714ull, 11398914698975566411ull},
      {13708282465491374871ull, 16007308345579681096ull},
      {15424829579845884309ull, 1898028439751125927ull},
      {9411697742461147792ull, 15714068361935982142ull},
      {10079222287618677782ull, 12870437757549876199ull},
      {17326737873898640088ull, 729039288628699544ull},
      {16644868984619524261ull, 1544825456798124994ull},
      {1857481142255628931ull, 596584038813451439ull},
      {18305404959516669237ull, 14103312907920476776ull},
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    SeedSequence ss(inputs[i]);
    EXPECT_EQ(ss.generate_state_u32(4), outputs[i]) << "input row " << i;
    EXPECT_EQ(ss.generate_state_u64(2), outputs64[i]) << "input row " << i;
  }
}

TEST(SeedSequenceTest, SmallIntegerMatchesNumpy017) {
  const std::vector<std::uint32_t> expected42 = {3444837047, 2669555309, 2046530742,
                                                 3581440988};
  EXPECT_EQ(SeedSequence(42).generate_state_u32(4), expected42);
}

TEST(SeedSequenceTest, LargeIntegersSplitLeastSignificantWordFirst) {
  EXPECT_NE(SeedSequence(42).generate_state_u32(4),
            SeedSequence(std::uint64_t{42} << 32).generate_state_u32(4));
  // 42 << 32 is the words [0, 42]; a list of those two words is the same entropy.
  const std::vector<std::uint64_t> words = {0, 42};
  EXPECT_EQ(SeedSequence(words).generate_state_u32(4),
            SeedSequence(std::uint64_t{42} << 32).generate_state_u32(4));
}

TEST(SeedSequenceTest, ZeroPaddingDoesNotCollideWithSpawnKey) {
  EXPECT_NE(SeedSequence(42, {0}).generate_state_u32(4),
            SeedSequence(42).generate_state_u32(4));
}

TEST(SeedSequenceTest, SpawnAppendsChildCounterToKey) {
  SeedSequence parent(7, {3});
  std::vector<SeedSequence> first = parent.spawn(2);
  std::vector<SeedSequence> second = parent.spawn(1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].spawn_key(), (std::vector<std::uint64_t>{3, 0}));
  EXPECT_EQ(first[1].spawn_key(), (std::vector<std::uint64_t>{3, 1}));
  EXPECT_EQ(second[0].spawn_key(), (std::vector<std::uint64_t>{3, 2}));
  EXPECT_EQ(parent.n_children_spawned(), 3u);
  EXPECT_EQ(first[1].generate_state_u32(4),
            SeedSequence(7, {3, 1}).generate_state_u32(4));
}

TEST(SeedSequenceTest, PoolSizeBelowFourIsAConfigError) {
  EXPECT_THROW(SeedSequence(1, {}, 3), std::runtime_error);
}

}  // namespace
}  // namespace seedloader
