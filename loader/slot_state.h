// SlotState: the one word through which the main process and a worker hand a
// batch slot to each other, plus timed waits on it (a Linux futex on a shared
// mapping, so it works across processes).
//
// Protocol (one producer and one consumer per transition):
//   kFree  --main writes a task, publish(kTask)-->            kTask
//   kTask  --worker fills the slot, publish(kReady|kError|kCancelled)--> ...
//   kReady/kError/kCancelled --main is done with it, publish(kFree)--> kFree
// Whoever publishes has finished writing the slot; whoever observes the new state
// with an acquire load may read it. A waiter that is about to sleep sets
// kSleeperBit first; publish() swaps the whole word and wakes only when that bit
// was set, so the common case costs no system call. interrupt() sets
// kInterruptBit, which makes every wait on the word return at once until the
// next publish() clears it: used to make workers notice a stop request.
// Safe across processes; the word must live in shared memory.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace seedloader {

enum SlotStateValue : std::uint32_t {
  kFree = 0,
  kTask = 1,
  kReady = 2,
  kError = 3,
  kCancelled = 4,
};
inline constexpr std::uint32_t kSleeperBit = 1u << 31;
inline constexpr std::uint32_t kInterruptBit = 1u << 30;
inline constexpr std::uint32_t kFlagBits = kSleeperBit | kInterruptBit;

using SlotWord = std::atomic<std::uint32_t>;
static_assert(SlotWord::is_always_lock_free, "slot words live in shared memory");
static_assert(sizeof(SlotWord) == 4, "a futex word is 32 bits");

// Stores `state` and wakes a sleeping waiter. Release: everything written to
// the slot before this call is visible to whoever acquires the new state.
void publish(SlotWord& word, std::uint32_t state);

// The current state without the sleeper bit. Acquire: pairs with publish().
inline std::uint32_t load_state(const SlotWord& word) {
  return word.load(std::memory_order_acquire) & ~kFlagBits;
}

// Waits at most `slice` for the state to satisfy `done` (spinning briefly, then
// sleeping on the futex); returns the last state seen, which the caller
// re-checks. Callers loop, checking liveness and deadlines between slices.
template <typename Done>
std::uint32_t wait_slice(SlotWord& word, Done done, std::chrono::microseconds slice);

// Sets kInterruptBit and wakes a sleeper, so waits on the word return until
// the next publish(). The caller's earlier stores (e.g. a stop flag) are
// visible to a waiter that sees the bit.
void interrupt(SlotWord& word);

namespace detail {
// Sleeps while word == expected, at most `slice`; spurious returns are fine.
void futex_wait(SlotWord& word, std::uint32_t expected, std::chrono::microseconds slice);
void cpu_relax();
}  // namespace detail

template <typename Done>
std::uint32_t wait_slice(SlotWord& word, Done done, std::chrono::microseconds slice) {
  constexpr int kSpins = 256;
  for (int i = 0; i < kSpins; ++i) {
    std::uint32_t s = load_state(word);
    if (done(s)) return s;
    detail::cpu_relax();
  }
  // Acquire, so a state seen here comes with the slot contents behind it.
  std::uint32_t seen = word.load(std::memory_order_acquire);
  if (done(seen & ~kFlagBits) || (seen & kInterruptBit)) return seen & ~kFlagBits;
  if (!(seen & kSleeperBit)) {
    // Announce the sleeper. acq_rel on success: acquire for the state read,
    // release is harmless. Acquire on failure too: the caller may act on the
    // state returned then, so the slot contents behind it must be visible.
    if (!word.compare_exchange_strong(seen, seen | kSleeperBit, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      return seen & ~kFlagBits;  // it changed under us: let the caller look
    }
    seen |= kSleeperBit;
  }
  detail::futex_wait(word, seen, slice);
  return load_state(word);
}

}  // namespace seedloader
