#include "seedloader/random.h"

#include <algorithm>

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

double standard_gamma(Rng& rng, double shape) {
  if (shape < 1.0) {
    // Gamma(shape) = Gamma(shape + 1) * U^(1/shape).
    const double u = uniform_double(rng);
    return standard_gamma(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x;
    double v;
    do {
      x = normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform_double(rng);
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double beta(Rng& rng, double a, double b) {
  if (a > 1.0 || b > 1.0) {
    const double ga = standard_gamma(rng, a);
    const double gb = standard_gamma(rng, b);
    return ga / (ga + gb);
  }
  for (;;) {
    const double u = uniform_double(rng);
    const double v = uniform_double(rng);
    const double x = std::pow(u, 1.0 / a);
    const double y = std::pow(v, 1.0 / b);
    const double sum = x + y;
    if (sum <= 1.0 && u + v > 0.0) {
      if (sum > 0.0) return x / sum;
      // Both powers underflowed: the same ratio in logarithms.
      double log_x = std::log(u) / a;
      double log_y = std::log(v) / b;
      const double log_max = std::max(log_x, log_y);
      log_x -= log_max;
      log_y -= log_max;
      return std::exp(log_x - std::log(std::exp(log_x) + std::exp(log_y)));
    }
  }
}

}  // namespace seedloader
