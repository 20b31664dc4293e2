// Portable draws from a Pcg64Stream: the same numbers on every platform and
// standard library (std::*_distribution and std::shuffle are not). Where numpy's
// Generator has the same operation, these follow its algorithm draw for draw:
//   bounded(rng, n)      == Generator(PCG64(seq)).integers(0, n)        (n <= 2^63)
//   uniform_double(rng)  == Generator(...).random()
//   uniform_float(rng)   == Generator(...).random(dtype=np.float32)
//   interval(rng, max)   == numpy's random_interval (masked rejection), which
//                           Generator.shuffle and permutation use
//   shuffle(rng, span)   == Generator(...).shuffle(array) / permutation(n)
//   beta(rng, a, b)      == Generator(...).beta(a, b)  for a <= 1 and b <= 1
// normal() is a Marsaglia polar method, not numpy's ziggurat, so beta() with a
// shape above 1 (gamma variates, which numpy draws with its ziggurat) follows
// numpy's algorithm but not its draws.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>

#include "seedloader/pcg64_stream.h"

namespace seedloader {

// An unbiased integer in [0, n) (Lemire's multiply-shift with rejection).
// REQUIRES: n >= 1.
std::uint64_t bounded(Rng& rng, std::uint64_t n);

// An unbiased integer in [0, max] by masked rejection.
std::uint64_t interval(Rng& rng, std::uint64_t max);

// A double in [0, 1) with 53 random bits.
inline double uniform_double(Rng& rng) {
  return static_cast<double>(rng.next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

// A float in [0, 1) with 24 random bits.
inline float uniform_float(Rng& rng) {
  return static_cast<float>(rng.next_u32() >> 8) * (1.0f / 16777216.0f);
}

// A double in [lo, hi).
inline double uniform(Rng& rng, double lo, double hi) {
  return lo + (hi - lo) * uniform_double(rng);
}

// True with probability p.
inline bool bernoulli(Rng& rng, double p) { return uniform_double(rng) < p; }

// A standard normal deviate.
double normal(Rng& rng);

// A Gamma(shape, 1) variate: Marsaglia and Tsang's method (shape >= 1), boosted
// by U^(1/shape) below 1. REQUIRES: shape > 0.
double standard_gamma(Rng& rng, double shape);

// A Beta(a, b) variate in [0, 1]: Johnk's algorithm when a, b <= 1 (numpy's,
// draw for draw), else the ratio of two gamma variates. REQUIRES: a, b > 0.
double beta(Rng& rng, double a, double b);

// Fisher-Yates shuffle in place, from the last element down.
template <typename T>
void shuffle(Rng& rng, std::span<T> items) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(interval(rng, i - 1));
    using std::swap;
    swap(items[i - 1], items[j]);
  }
}

}  // namespace seedloader
