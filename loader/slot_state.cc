#include "loader/slot_state.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace seedloader {

namespace {
long futex(SlotWord& word, int op, std::uint32_t val, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, val, timeout,
                 nullptr, 0);
}
}  // namespace

void publish(SlotWord& word, std::uint32_t state) {
  // Release: the slot's contents (task or batch) happen-before the reader's
  // acquire of this state. The exchange also tells us whether anyone sleeps.
  std::uint32_t old = word.exchange(state, std::memory_order_acq_rel);
  if (old & kSleeperBit) futex(word, FUTEX_WAKE, INT_MAX, nullptr);
}

void interrupt(SlotWord& word) {
  // Release: a stop flag stored before this is visible to whoever acquires
  // the interrupted word. Changing the word also makes a FUTEX_WAIT that is
  // just starting return at once (EAGAIN).
  std::uint32_t old = word.fetch_or(kInterruptBit, std::memory_order_acq_rel);
  if (old & kSleeperBit) futex(word, FUTEX_WAKE, INT_MAX, nullptr);
}

namespace detail {

void futex_wait(SlotWord& word, std::uint32_t expected, std::chrono::microseconds slice) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(slice.count() / 1000000);
  ts.tv_nsec = static_cast<long>((slice.count() % 1000000) * 1000);
  // EAGAIN (value changed), EINTR and ETIMEDOUT all mean "look again".
  futex(word, FUTEX_WAIT, expected, &ts);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace detail
}  // namespace seedloader
