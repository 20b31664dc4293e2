// The shared region, its layout and the slot hand-off protocol, across fork.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "loader/shared_layout.h"
#include "loader/shared_region.h"
#include "loader/slot_state.h"
#include "seedloader/dataset.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

SampleLayout two_fields() {
  return SampleLayout(
      {{"image", DType::kU8, {3, 5, 7}, false}, {"label", DType::kI64, {}, false}});
}

TEST(RegionLayoutTest, SlotsArePageAlignedAndHoldTheirFields) {
  RegionLayout layout(two_fields(), 10, 3, 2);
  EXPECT_EQ(layout.num_slots(), 6);
  const SlotGeometry& g = layout.slot();
  EXPECT_EQ(g.bytes % 4096, 0u);
  EXPECT_EQ(g.field_row_bytes[0], 105u);
  EXPECT_EQ(g.field_row_bytes[1], 8u);
  EXPECT_GE(g.field_offset[1], g.field_offset[0] + 1050);
  EXPECT_GE(g.bytes, g.field_offset[1] + 80);
  for (int s = 0; s < layout.num_slots(); ++s) {
    EXPECT_EQ(layout.data(s) % 4096, 0u);
    EXPECT_GE(layout.data(s), layout.header(layout.num_slots() - 1) + sizeof(SlotHeader));
  }
  EXPECT_EQ(layout.total_bytes(), layout.data(5) + g.bytes);
}

TEST(RegionLayoutTest, TheReadAheadLiesBetweenTheHeadersAndTheSlots) {
  const RegionLayout none(two_fields(), 10, 3, 2);
  EXPECT_EQ(none.read_ahead_capacity(), 0u);
  const RegionLayout some(two_fields(), 10, 3, 2, 5000);
  EXPECT_EQ(some.read_ahead_capacity(), 5000u);
  EXPECT_EQ(some.read_ahead() % 64, 0u);
  EXPECT_GE(some.read_ahead(), some.header(5) + sizeof(SlotHeader));
  EXPECT_EQ(some.read_ahead_indices(), some.read_ahead() + sizeof(ReadAhead));
  EXPECT_GE(some.data(0), some.read_ahead_indices() + 5000 * 8);
  EXPECT_EQ(some.data(0) % 4096, 0u);
  // More than a data set may ask for is cut to the most the loader keeps.
  const RegionLayout capped(two_fields(), 10, 3, 2, Dataset::kMaxReadAhead + 1);
  EXPECT_EQ(capped.read_ahead_capacity(), Dataset::kMaxReadAhead);
}

TEST(RegionLayoutTest, AnAbsurdBatchIsAConfigError) {
  SampleLayout huge({{"x", DType::kF64, {1 << 30, 1 << 30}, false}});
  EXPECT_THROW(RegionLayout(huge, 1ull << 40, 2, 2), ConfigError);
}

TEST(SharedRegionTest, ChildWritesAreSeenByTheParent) {
  SharedRegion region(1 << 20);
  ASSERT_EQ(region.size(), 1u << 20);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::memcpy(region.base() + 4096, "hello", 6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_STREQ(reinterpret_cast<const char*>(region.base() + 4096), "hello");
}

TEST(SlotStateTest, ConsumerSeesSlotOnlyAfterPublish) {
  SharedRegion region(1 << 16);
  auto* word = new (region.base()) SlotWord(kFree);
  auto* payload = reinterpret_cast<std::uint64_t*>(region.base() + 4096);
  constexpr int kRounds = 2000;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Producer: waits for kTask, writes the round's payload, publishes kReady.
    for (int r = 0; r < kRounds; ++r) {
      while (wait_slice(
                 *word, [](std::uint32_t s) { return s == kTask; },
                 std::chrono::microseconds(100000)) != kTask) {
      }
      for (int i = 0; i < 64; ++i) payload[i] = static_cast<std::uint64_t>(r) * 64 + i;
      publish(*word, kReady);
    }
    _exit(0);
  }
  bool ok = true;
  for (int r = 0; r < kRounds && ok; ++r) {
    publish(*word, kTask);
    while (wait_slice(
               *word, [](std::uint32_t s) { return s != kTask; },
               std::chrono::microseconds(100000)) == kTask) {
    }
    for (int i = 0; i < 64; ++i) {
      if (payload[i] != static_cast<std::uint64_t>(r) * 64 + i) ok = false;
    }
    publish(*word, kFree);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// The same hand-off between two threads, so ThreadSanitizer can check that
// publish()/wait_slice() order the plain payload writes and reads.
TEST(SlotStateTest, HandOffBetweenThreadsIsRaceFree) {
  SlotWord word(kFree);
  std::uint64_t payload[16] = {};
  constexpr int kRounds = 2000;
  std::thread producer([&] {
    for (int r = 0; r < kRounds; ++r) {
      while (wait_slice(
                 word, [](std::uint32_t s) { return s == kTask; },
                 std::chrono::microseconds(100000)) != kTask) {
      }
      for (int i = 0; i < 16; ++i) payload[i] = static_cast<std::uint64_t>(r + i);
      publish(word, kReady);
    }
  });
  int bad = 0;
  for (int r = 0; r < kRounds; ++r) {
    publish(word, kTask);
    while (wait_slice(
               word, [](std::uint32_t s) { return s != kTask; },
               std::chrono::microseconds(100000)) == kTask) {
    }
    for (int i = 0; i < 16; ++i) bad += payload[i] != static_cast<std::uint64_t>(r + i);
    publish(word, kFree);
  }
  producer.join();
  EXPECT_EQ(bad, 0);
}

TEST(SlotStateTest, InterruptMakesWaitsReturnUntilTheNextPublish) {
  SlotWord word(kFree);
  interrupt(word);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(wait_slice(
                word, [](std::uint32_t s) { return s == kTask; },
                std::chrono::microseconds(2000000)),
            kFree);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  publish(word, kTask);
  EXPECT_EQ(word.load(), kTask);  // the interrupt bit is gone
}

TEST(SlotStateTest, WaitSliceReturnsAfterItsTimeoutWhenNothingHappens) {
  SlotWord word(kTask);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(wait_slice(
                word, [](std::uint32_t s) { return s == kReady; },
                std::chrono::microseconds(20000)),
            kTask);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace seedloader
