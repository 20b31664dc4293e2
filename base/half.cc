#include "seedloader/half.h"

#include <bit>

namespace seedloader {

Float16 to_float16(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf, or NaN (kept quiet and NaN)
    return {static_cast<std::uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u))};
  }
  if (abs >= 0x477ff000u) {  // rounds to beyond 65504: infinity
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  }
  if (abs < 0x38800000u) {  // below 2^-14: a half subnormal (or zero)
    // The value in units of 2^-24, rounded to nearest, ties to even.
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14 + (113 - exponent)
    if (shift > 24) return {static_cast<std::uint16_t>(sign)};
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    const std::uint32_t r = q + (rem > half || (rem == half && (q & 1u)) ? 1u : 0u);
    return {static_cast<std::uint16_t>(sign | r)};
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even (a
  // carry into the exponent is the right result).
  const std::uint32_t rebased = abs - (112u << 23);
  const std::uint32_t r = (rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13;
  return {static_cast<std::uint16_t>(sign | r)};
}

BFloat16 to_bfloat16(float x) {
  const std::uint32_t f = std::bit_cast<std::uint32_t>(x);
  if ((f & 0x7fffffffu) > 0x7f800000u)
    return {static_cast<std::uint16_t>((f >> 16) | 0x40u)};  // NaN stays NaN
  return {static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16)};
}

float to_float(Float16 x) {
  const std::uint32_t sign = (x.bits & 0x8000u) << 16;
  const std::uint32_t exp = (x.bits >> 10) & 0x1fu, mant = x.bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

float to_float(BFloat16 x) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(x.bits) << 16);
}

}  // namespace seedloader
