// Fuzzes restart indexes and the JPEG built from an index's rows: the input is a
// little-endian u32 N, N bytes of a `.rst` member, then a JPEG (the layout
// make_corpus writes). A window chosen from a hash of the input is decoded
// through the index (decode_restart_index, slice_jpeg, the window decoder);
// when that succeeds, the same window decoded from the whole JPEG must succeed
// with the same pixels unless the whole JPEG is damaged outside the rows the
// index used: an index never yields wrong pixels.
// An N with its top bit set is a shift instead: the JPEG follows at once, and
// its index is the JPEG's own (index_restarts) with every marker k moved to
// where marker k + d is, d the signed low byte of N (entries left without one
// go, in order, onto bytes of the first or last interval). Byte mutations of a
// `.rst` rarely turn one real marker's offset into another's; this makes an
// index of real markers all misnumbered by d (by 8: each numbered right mod 8).
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <opencv2/core.hpp>

#include "loader/datasets/image_decode.h"
#include "loader/datasets/jpeg_restart.h"
#include "seedloader/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// `jpeg`'s own index with marker k at real marker k + d, as the header says.
std::vector<std::uint8_t> shifted_index(std::span<const std::uint8_t> jpeg, int d) {
  using seedloader::RestartIndex;
  const RestartIndex real = seedloader::index_restarts(jpeg);
  RestartIndex x = real;
  const std::int64_t n = static_cast<std::int64_t>(real.markers.size());
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t j = k + d;
    std::uint64_t at;
    if (j >= 0 && j < n)
      at = real.markers[static_cast<std::size_t>(j)];
    else if (j >= n)  // after the last marker, 2 bytes apart
      at = std::uint64_t{real.markers.back()} + 2 + 2 * std::uint64_t(j - n);
    else  // from the scan's first byte on, 2 bytes apart
      at = real.scan_start + 2 * std::uint64_t(k);
    x.markers[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(at);
  }
  return seedloader::encode_restart_index(x);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  if (size < 4) return 0;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t(data[i]) << (8 * i);
  const bool shift = (n & 0x80000000u) != 0;
  if (shift) n = 0;
  if (n > size - 4) return 0;
  std::span<const std::uint8_t> index(data + 4, n);
  const std::span<const std::uint8_t> jpeg(data + 4 + n, size - 4 - n);
  auto [reduction, channels, h] = fuzz::decode_choice(data, size);
  try {
    std::vector<std::uint8_t> made;
    if (shift) {
      made = shifted_index(jpeg, static_cast<std::int8_t>(data[0]));
      index = made;
    }
    const EncodedImage sliced(jpeg, /*max_pixels=*/1 << 22, channels, index);
    const cv::Size full = sliced.size();
    if (full.width <= 0 || full.height <= 0) return 0;
    const fuzz::Window w = fuzz::window_from(h, full.width, full.height);
    const cv::Rect region(w.x, w.y, w.width, w.height);
    cv::Rect crop;
    const cv::Mat a = sliced.decode_region(reduction, region, &crop);
    check(a.channels() == channels && a.depth() == CV_8U);
    check((crop & cv::Rect(0, 0, a.cols, a.rows)) == crop);
    const EncodedImage whole(jpeg, 1 << 22, channels);
    cv::Rect whole_crop;
    cv::Mat b;
    try {
      b = whole.decode_region(reduction, region, &whole_crop);
    } catch (const Error&) {
      return 0;  // damage in rows the index let the slice skip
    }
    check(whole_crop == crop);
    check(cv::norm(a(crop), b(whole_crop), cv::NORM_INF) == 0);
  } catch (const Error&) {
  }
  return 0;
}
