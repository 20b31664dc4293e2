#include "seedloader/pcg64_stream.h"

#include "seedloader/error.h"

namespace seedloader {
namespace {

using u128 = pcg_extras::pcg128_t;
// pcg-cpp keeps the LCG state and increment protected (its stream operators
// cannot read 128-bit values back with libstdc++). Pointers to those members,
// formed in a derived class where they are accessible, reach them on any pcg64.
struct Pcg64Members : pcg64 {
  static constexpr auto state = &Pcg64Members::state_;
  static constexpr auto inc = &Pcg64Members::inc_;
};

u128 join(std::uint64_t hi, std::uint64_t lo) {
  return (static_cast<u128>(hi) << 64) | lo;
}

pcg64 make_engine(const std::array<std::uint64_t, 4>& s) {
  // pcg64(state, stream) sets inc = (stream << 1) | 1 and advances once after
  // adding the state, as numpy's pcg64_set_seed does.
  return pcg64(join(s[0], s[1]), join(s[2], s[3]));
}

std::array<std::uint64_t, 4> words_of(const SeedSequence& seq) {
  std::vector<std::uint64_t> v = seq.generate_state_u64(4);
  return {v[0], v[1], v[2], v[3]};
}

}  // namespace

Pcg64Stream::Pcg64Stream(const SeedSequence& seq) : Pcg64Stream(words_of(seq)) {}

Pcg64Stream::Pcg64Stream(const std::array<std::uint64_t, 4>& state_words)
    : engine_(make_engine(state_words)) {}

Pcg64Stream::RawState Pcg64Stream::raw_state() const {
  const u128 state = engine_.*Pcg64Members::state;
  const u128 inc = engine_.*Pcg64Members::inc;
  RawState raw;
  raw.state_hi = static_cast<std::uint64_t>(state >> 64);
  raw.state_lo = static_cast<std::uint64_t>(state);
  raw.inc_hi = static_cast<std::uint64_t>(inc >> 64);
  raw.inc_lo = static_cast<std::uint64_t>(inc);
  raw.has_u32 = has_u32_;
  raw.buffered_u32 = has_u32_ ? buffered_u32_ : 0;
  return raw;
}

void Pcg64Stream::set_raw_state(const RawState& raw) {
  if ((raw.inc_lo & 1) == 0) throw ConfigError("PCG64 state: the increment must be odd");
  engine_.*Pcg64Members::state = join(raw.state_hi, raw.state_lo);
  engine_.*Pcg64Members::inc = join(raw.inc_hi, raw.inc_lo);
  has_u32_ = raw.has_u32;
  buffered_u32_ = raw.has_u32 ? raw.buffered_u32 : 0;
}

}  // namespace seedloader
