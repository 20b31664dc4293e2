#include "seedloader/pcg64_stream.h"

#include <gtest/gtest.h>

#include "seedloader/derive.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

// numpy 1.24's numpy/random/tests/data/pcg64-testset-{1,2}.csv:
// PCG64(seed).random_raw() for seeds 0xdeadbeaf and 0.
TEST(Pcg64StreamTest, MatchesNumpyPublishedTestSets) {
  Pcg64Stream a(SeedSequence(0xdeadbeaf));
  for (std::uint64_t e :
       {0x60d24054e17a0698ull, 0xd5e79d89856e4f12ull, 0xd254972fe64bd782ull,
        0xf1e3072a53c72571ull, 0xd7c1d7393d4115c9ull, 0x77b75928b763e1e2ull}) {
    EXPECT_EQ(a.next_u64(), e);
  }
  Pcg64Stream b(SeedSequence(0));
  for (std::uint64_t e :
       {0xa30febcfd9c2825full, 0x4510bdf882d9d721ull, 0x0a7d3da94ecde8b8ull}) {
    EXPECT_EQ(b.next_u64(), e);
  }
}

TEST(Pcg64StreamTest, SeededFromSpawnKeyLikeNumpy) {
  // np.random.PCG64(np.random.SeedSequence(42, spawn_key=(1, 2, 3))).random_raw()
  Pcg64Stream rng(SeedSequence(42, {1, 2, 3}));
  EXPECT_EQ(rng.next_u64(), 0x735ca24a6ff4a80eull);
}

TEST(Pcg64StreamTest, ThirtyTwoBitDrawsUseLowHalfThenHighHalf) {
  Pcg64Stream a(SeedSequence(5));
  Pcg64Stream b(SeedSequence(5));
  const std::uint64_t word = a.next_u64();
  EXPECT_EQ(b.next_u32(), static_cast<std::uint32_t>(word));
  EXPECT_EQ(b.next_u32(), static_cast<std::uint32_t>(word >> 32));
  EXPECT_EQ(b.next_u64(), a.next_u64());
}

TEST(Pcg64StreamTest, FingerprintIsNextOutputWithoutConsumingIt) {
  Pcg64Stream rng(SeedSequence(9));
  const std::uint64_t fp = rng.fingerprint();
  EXPECT_EQ(rng.fingerprint(), fp);
  EXPECT_EQ(rng.next_u64(), fp);
  EXPECT_NE(rng.fingerprint(), fp);
}

TEST(Pcg64StreamTest, FingerprintChangesWhenOnlyTheBufferedHalfIsDrawn) {
  Pcg64Stream rng(SeedSequence(9));
  rng.next_u32();  // buffers the high half
  const std::uint64_t with_half = rng.fingerprint();
  rng.next_u32();  // consumes only the buffered half
  EXPECT_NE(rng.fingerprint(), with_half);
}

TEST(Pcg64StreamTest, AdvanceDropsTheBufferedHalfLikeNumpy) {
  // One 32-bit draw takes a whole word (its high half buffered); after
  // advance(3) the next 32-bit draw is the low half of word 5, not the buffer.
  Pcg64Stream a(SeedSequence(9));
  Pcg64Stream b(SeedSequence(9));
  a.next_u32();
  a.advance(3);
  b.advance(4);
  EXPECT_EQ(a.next_u32(), static_cast<std::uint32_t>(b.next_u64()));
}

TEST(Pcg64StreamTest, AdvanceSkipsOutputs) {
  Pcg64Stream a(SeedSequence(11));
  Pcg64Stream b(SeedSequence(11));
  for (int i = 0; i < 1000; ++i) a.next_u64();
  b.advance(1000);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(Pcg64StreamTest, CopiesAreIndependentValues) {
  Pcg64Stream a = worker_stream(1, 0, 0, 0);
  Pcg64Stream b = a;
  EXPECT_EQ(a.next_u64(), b.next_u64());
  a.next_u64();
  EXPECT_NE(a, b);
}

// numpy: b = PCG64(SeedSequence(1234, spawn_key=(1, 0, 0, 0))); b.state, then again
// after one 32-bit draw.
TEST(Pcg64StreamRawStateTest, EqualsNumpysStateBeforeAndAfterAThirtyTwoBitDraw) {
  Pcg64Stream s = worker_stream(1234, 0, 0, 0);
  Pcg64Stream::RawState r = s.raw_state();
  EXPECT_EQ(r.state_hi, 0x4486ad57ed4aeceaull);
  EXPECT_EQ(r.state_lo, 0x8277bb912b54999bull);
  EXPECT_EQ(r.inc_hi, 0x08d629e35b782bdeull);
  EXPECT_EQ(r.inc_lo, 0xbfa56a9a776f9f93ull);
  EXPECT_FALSE(r.has_u32);
  s.next_u32();
  r = s.raw_state();
  EXPECT_TRUE(r.has_u32);
  EXPECT_EQ(r.buffered_u32, 0xc4b64d29u);
  EXPECT_EQ(r.state_hi, 0xc62219d08708cc42ull);
  EXPECT_EQ(r.state_lo, 0x972190bc1d5bf85aull);
  EXPECT_EQ(s.next_u64(), 0xfb3113a1efb2f00full);
}

TEST(Pcg64StreamRawStateTest, SetRawStateResumesTheSameStreamExactly) {
  Pcg64Stream a = worker_stream(7, 3, 1, 2);
  a.next_u64();
  a.next_u32();  // leaves a buffered half
  Pcg64Stream b = worker_stream(99, 0, 0, 0);
  b.set_raw_state(a.raw_state());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.next_u32(), b.next_u32());
  EXPECT_EQ(a.next_u64(), b.next_u64());
  Pcg64Stream::RawState even = a.raw_state();
  even.inc_lo &= ~1ull;
  EXPECT_THROW(b.set_raw_state(even), ConfigError);
}

}  // namespace
}  // namespace seedloader
