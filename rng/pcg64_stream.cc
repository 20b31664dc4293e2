#include "rng/pcg64_stream.h"

namespace seedloader {
namespace {

pcg64 make_engine(const std::array<std::uint64_t, 4>& s) {
  using u128 = pcg_extras::pcg128_t;
  const u128 state = (static_cast<u128>(s[0]) << 64) | s[1];
  const u128 stream = (static_cast<u128>(s[2]) << 64) | s[3];
  // pcg64(state, stream) sets inc = (stream << 1) | 1 and advances once after
  // adding the state, as numpy's pcg64_set_seed does.
  return pcg64(state, stream);
}

std::array<std::uint64_t, 4> words_of(const SeedSequence& seq) {
  std::vector<std::uint64_t> v = seq.generate_state_u64(4);
  return {v[0], v[1], v[2], v[3]};
}

}  // namespace

Pcg64Stream::Pcg64Stream(const SeedSequence& seq) : Pcg64Stream(words_of(seq)) {}

Pcg64Stream::Pcg64Stream(const std::array<std::uint64_t, 4>& state_words)
    : seed_words_(state_words), engine_(make_engine(state_words)) {}

}  // namespace seedloader
