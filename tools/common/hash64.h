// 64-bit mixing and string hashing for the audit: rng strings and content hashes are
// reduced to 64 bits, so equal strings give equal values and different ones collide
// with probability about 2^-64 per pair. Not cryptographic. Pure functions.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace seedloader::tools {

// A bijection on 64-bit values (splitmix64's finalizer).
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

inline std::uint64_t hash_bytes(std::string_view s) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ (s.size() * 0xff51afd7ed558ccdull);
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix64(h ^ w);
  }
  if (i < s.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = mix64(h ^ w ^ 0x8000000000000000ull);
  }
  return mix64(h + 0x632be59bd9b4e019ull);
}

}  // namespace seedloader::tools
