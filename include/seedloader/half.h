// Half precision and bfloat16 values, as their 16 bits, and the conversions
// from and to float: rounding to nearest with ties to even (what torch's .half()
// and .bfloat16() do), NaN kept NaN, overflow to infinity; back to float exactly.
// Plain values and pure functions.
#pragma once

#include <cstdint>

namespace seedloader {

// An IEEE 754 binary16 value.
struct Float16 {
  std::uint16_t bits;
};
// A bfloat16 value (a float's upper 16 bits).
struct BFloat16 {
  std::uint16_t bits;
};

Float16 to_float16(float x);
BFloat16 to_bfloat16(float x);
float to_float(Float16 x);
float to_float(BFloat16 x);

}  // namespace seedloader
