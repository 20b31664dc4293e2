// Pcg64Stream: pcg-cpp's pcg64 (XSL-RR 128/64) seeded exactly as numpy's
// PCG64(SeedSequence): s = generate_state(4, uint64), state seed (s0 << 64) | s1,
// stream (s2 << 64) | s3. next_u64() equals numpy's random_raw(); next_u32() and
// uniform_double() follow numpy's bit generator (the 32-bit half-word buffer
// included), so Python users can reproduce every draw.
// A value type: copy it to fork a stream. Not thread-safe; one owner at a time.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include <pcg_random.hpp>

#include "seedloader/seed_sequence.h"

namespace seedloader {

class Pcg64Stream {
 public:
  using result_type = std::uint64_t;

  explicit Pcg64Stream(const SeedSequence& seq);
  // The four uint64 words as numpy's generate_state(4, uint64) returns them.
  explicit Pcg64Stream(const std::array<std::uint64_t, 4>& state_words);

  std::uint64_t next_u64() { return engine_(); }
  // numpy's next_uint32: the low half of a 64-bit draw first, its high half next.
  std::uint32_t next_u32() {
    if (has_u32_) {
      has_u32_ = false;
      return buffered_u32_;
    }
    std::uint64_t v = engine_();
    has_u32_ = true;
    buffered_u32_ = static_cast<std::uint32_t>(v >> 32);
    return static_cast<std::uint32_t>(v);
  }

  // UniformRandomBitGenerator, so the stream can feed generic code that only
  // needs raw bits. Never pass it to std::*_distribution (not portable).
  std::uint64_t operator()() { return next_u64(); }
  static constexpr std::uint64_t min() { return 0; }
  static constexpr std::uint64_t max() {
    return std::numeric_limits<std::uint64_t>::max();
  }

  // The stream's next 64-bit output, without consuming it, mixed with a pending
  // 32-bit half when there is one: equal fingerprints mean equal states (for the
  // audit), and a draw of only the buffered half still changes the fingerprint.
  std::uint64_t fingerprint() const {
    pcg64 copy = engine_;
    std::uint64_t fp = copy();
    if (has_u32_) fp ^= (static_cast<std::uint64_t>(buffered_u32_) << 32 | 1) * kMixOdd;
    return fp;
  }

  // Skip n 64-bit outputs in O(log n). Drops a pending 32-bit half, as numpy's
  // PCG64.advance does.
  void advance(std::uint64_t n) {
    engine_.advance(n);
    has_u32_ = false;
    buffered_u32_ = 0;
  }

  // The generator's complete state, in the terms of numpy's PCG64.state: the
  // 128-bit LCG state and increment (as high and low words) and the 32-bit
  // half-word buffer. Lets a stream cross to numpy and back at any point:
  //   bg.state = {"bit_generator": "PCG64",
  //               "state": {"state": state_hi << 64 | state_lo, "inc": inc_hi << 64 |
  //               inc_lo}, "has_uint32": has_u32, "uinteger": buffered_u32}
  struct RawState {
    std::uint64_t state_hi = 0, state_lo = 0;
    std::uint64_t inc_hi = 0, inc_lo = 1;
    bool has_u32 = false;
    std::uint32_t buffered_u32 = 0;
  };
  RawState raw_state() const;
  // Throws ConfigError for an even increment (numpy's PCG64 keeps it odd).
  void set_raw_state(const RawState& raw);

  friend bool operator==(const Pcg64Stream& a, const Pcg64Stream& b) {
    return a.engine_ == b.engine_ && a.has_u32_ == b.has_u32_ &&
           (!a.has_u32_ || a.buffered_u32_ == b.buffered_u32_);
  }

 private:
  static constexpr std::uint64_t kMixOdd = 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio

  pcg64 engine_;
  bool has_u32_ = false;
  std::uint32_t buffered_u32_ = 0;
};

// The random stream handed to datasets and transforms.
using Rng = Pcg64Stream;

}  // namespace seedloader
