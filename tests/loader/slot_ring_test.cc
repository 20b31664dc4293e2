// SlotRing: the consumer's slot for each batch is the slot its worker serves
// next, across epochs that start part-way, end early, and re-forks; and an
// epoch's first batches avoid the slot of the previous epoch's last one.
#include "loader/slot_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace seedloader {
namespace {

// Plays the workers' side: each counts the tasks it was handed, starting where
// the ring says a worker forked now starts.
struct Workers {
  explicit Workers(const SlotRing& ring) {
    for (int w = 0; w < ring.workers(); ++w) served.push_back(ring.tasks_issued(w));
  }
  std::vector<std::uint64_t> served;
};

// Issues batches [first, first + n) the way the engine does and checks each
// lands in the slot its worker serves next.
void run_epoch(SlotRing& ring, Workers& workers, std::uint64_t first, std::uint64_t n) {
  ring.begin_epoch(first);
  for (std::uint64_t k = first; k < first + n; ++k) {
    const int s = ring.slot_of(k);
    const int w = static_cast<int>((k - first) % ring.workers());
    ASSERT_EQ(ring.owner(s), w) << "batch " << k;
    ASSERT_EQ(s, ring.worker_slot(w, workers.served[w]++)) << "batch " << k;
    ring.issued(s);
  }
}

TEST(SlotRingTest, WorkerAndConsumerAgreeOnEverySlot) {
  for (int w : {1, 2, 3, 7}) {
    for (int p : {1, 2, 4}) {
      SCOPED_TRACE(testing::Message() << "W=" << w << " P=" << p);
      SlotRing ring(w, p);
      Workers workers(ring);
      // Whole epochs, epochs resumed part-way and epochs abandoned after a
      // number of batches that is no multiple of W: every task issued is
      // still served by its worker, so the counts stay in step.
      run_epoch(ring, workers, 0, 10);
      run_epoch(ring, workers, 3, 5);
      run_epoch(ring, workers, 0, 1);
      run_epoch(ring, workers, 7, 13);
    }
  }
}

TEST(SlotRingTest, ReforkedWorkersContinueTheCount) {
  SlotRing ring(3, 2);
  Workers before(ring);
  run_epoch(ring, before, 0, 5);
  Workers after(ring);  // workers re-forked: they start where the ring is
  EXPECT_EQ(after.served, before.served);
  run_epoch(ring, after, 2, 8);
}

TEST(SlotRingTest, AnEpochsFirstBatchNeverTakesThePreviousEpochsLastSlot) {
  for (int w : {1, 2, 3}) {
    for (int p : {2, 3}) {
      for (std::uint64_t n : {1, 4, 5, 9}) {
        SCOPED_TRACE(testing::Message() << "W=" << w << " P=" << p << " n=" << n);
        SlotRing ring(w, p);
        Workers workers(ring);
        run_epoch(ring, workers, 0, n);
        const int last = ring.slot_of(n - 1);
        ring.begin_epoch(0);
        EXPECT_NE(ring.slot_of(0), last);
      }
    }
  }
}

TEST(SlotRingTest, EachWorkerServesOnlyItsOwnSlots) {
  SlotRing ring(4, 3);
  EXPECT_EQ(ring.num_slots(), 12);
  for (int w = 0; w < 4; ++w) {
    for (std::uint64_t j = 0; j < 10; ++j) {
      const int s = ring.worker_slot(w, j);
      EXPECT_EQ(ring.owner(s), w);
      EXPECT_EQ(s, w * 3 + static_cast<int>(j % 3));
    }
  }
}

TEST(SlotRingTest, ConsecutiveBatchesOfOneWorkerUseConsecutiveSlots) {
  SlotRing ring(2, 3);
  ring.begin_epoch(0);
  // Batches 0, 2, 4, 6 go to worker 0 and wrap around its three slots.
  EXPECT_EQ(ring.slot_of(0), 0);
  EXPECT_EQ(ring.slot_of(2), 1);
  EXPECT_EQ(ring.slot_of(4), 2);
  EXPECT_EQ(ring.slot_of(6), 0);
  EXPECT_EQ(ring.slot_of(1), 3);
  EXPECT_EQ(ring.slot_of(3), 4);
}

}  // namespace
}  // namespace seedloader
