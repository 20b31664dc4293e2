// Helpers for the libFuzzer targets: a scratch directory per fuzzing process (the
// targets run concurrently with the test suite and with each other) and writing
// the input where a parser wants a file. Every target catches seedloader::Error,
// the one way the project reports bad input; any other exception escapes
// LLVMFuzzerTestOneInput, aborts, and is a finding, as are crashes, leaks and UB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/common/temp_dir.h"

namespace seedloader::fuzz {

// This process's scratch directory, with a trailing '/'.
inline const std::string& scratch() { return testing_util::process_temp_dir(); }

// Writes `size` bytes to `path`, replacing it.
inline void write_file(const std::string& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("fuzz: cannot write " + path);
}

// A cheap hash of the input, for choosing decode parameters without spending
// input bytes on them (so the corpus files stay plain, valid files).
inline std::uint64_t mix(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ size;
  for (std::size_t i = 0; i < size; i += 1 + size / 64)
    h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

// What a decoding target takes from its input's hash: a DCT reduction (1, 2, 4
// or 8), a channel count (1 or 3), and the rest of the hash for later choices.
struct DecodeChoice {
  int reduction;
  int channels;
  std::uint64_t rest;
};
inline DecodeChoice decode_choice(const std::uint8_t* data, std::size_t size) {
  const std::uint64_t h = mix(data, size);
  return {1 << (h & 3), ((h >> 2) & 1) ? 3 : 1, h >> 3};
}

// A window inside a width x height image, drawn from `h` (which it consumes):
// x, y, and a width and height of at least 1 that stay inside.
struct Window {
  int x, y, width, height;
};
inline Window window_from(std::uint64_t& h, int width, int height) {
  Window w{};
  w.x = static_cast<int>(h % static_cast<std::uint64_t>(width));
  h /= static_cast<std::uint64_t>(width);
  w.y = static_cast<int>(h % static_cast<std::uint64_t>(height));
  h /= static_cast<std::uint64_t>(height);
  w.width = 1 + static_cast<int>(h % static_cast<std::uint64_t>(width - w.x));
  h /= static_cast<std::uint64_t>(width - w.x);
  w.height = 1 + static_cast<int>(h % static_cast<std::uint64_t>(height - w.y));
  return w;
}

}  // namespace seedloader::fuzz
