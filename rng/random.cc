#include "seedloader/random.h"

namespace seedloader {
namespace {

// numpy's bounded_lemire_uint32: draws 32-bit words (buffered halves).
std::uint32_t lemire32(Rng& rng, std::uint32_t max_inclusive) {
  const std::uint32_t range = max_inclusive + 1;
  std::uint64_t m = static_cast<std::uint64_t>(rng.next_u32()) * range;
  auto leftover = static_cast<std::uint32_t>(m);
  if (leftover < range) {
    const std::uint32_t threshold = (UINT32_MAX - max_inclusive) % range;
    while (leftover < threshold) {
      m = static_cast<std::uint64_t>(rng.next_u32()) * range;
      leftover = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::uint32_t>(m >> 32);
}

std::uint64_t lemire64(Rng& rng, std::uint64_t max_inclusive) {
  const std::uint64_t range = max_inclusive + 1;
  unsigned __int128 m = static_cast<unsigned __int128>(rng.next_u64()) * range;
  auto leftover = static_cast<std::uint64_t>(m);
  if (leftover < range) {
    const std::uint64_t threshold = (UINT64_MAX - max_inclusive) % range;
    while (leftover < threshold) {
      m = static_cast<unsigned __int128>(rng.next_u64()) * range;
      leftover = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

}  // namespace

std::uint64_t bounded(Rng& rng, std::uint64_t n) {
  // The case split mirrors numpy's random_bounded_uint64, so the number of words
  // consumed (and hence every later draw) matches too.
  const std::uint64_t max_inclusive = n - 1;
  if (max_inclusive == 0) return 0;
  if (max_inclusive <= 0xFFFFFFFFull) {
    if (max_inclusive == 0xFFFFFFFFull) return rng.next_u32();
    return lemire32(rng, static_cast<std::uint32_t>(max_inclusive));
  }
  if (max_inclusive == UINT64_MAX) return rng.next_u64();
  return lemire64(rng, max_inclusive);
}

std::uint64_t interval(Rng& rng, std::uint64_t max) {
  if (max == 0) return 0;
  std::uint64_t mask = max;
  for (int shift = 1; shift < 64; shift *= 2) mask |= mask >> shift;
  std::uint64_t value;
  if (max <= 0xFFFFFFFFull) {
    while ((value = rng.next_u32() & mask) > max) {
    }
  } else {
    while ((value = rng.next_u64() & mask) > max) {
    }
  }
  return value;
}

double normal(Rng& rng) {
  // Marsaglia's polar method; the second deviate is discarded so one call draws
  // from the stream independently of earlier calls.
  for (;;) {
    double u = 2.0 * uniform_double(rng) - 1.0;
    double v = 2.0 * uniform_double(rng) - 1.0;
    double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

}  // namespace seedloader
