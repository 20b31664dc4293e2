// Reading fixed-width integers from byte buffers in a stated byte order, for the
// file-format parsers (IDX, PNG, BMP, WebP). Pure functions.
#pragma once

#include <cstdint>

namespace seedloader {

inline std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
         (std::uint32_t{p[2]} << 8) | p[3];
}
inline std::uint32_t load_le32(const std::uint8_t* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}
inline std::uint32_t load_le24(const std::uint8_t* p) {
  return p[0] | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16);
}

}  // namespace seedloader
