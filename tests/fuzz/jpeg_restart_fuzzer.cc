// Fuzzes restart indexes and the JPEG built from an index's rows: the input is a
// little-endian u32 N, N bytes of a `.rst` member, then a JPEG (the layout
// make_corpus writes). A window chosen from a hash of the input is decoded
// through the index (decode_restart_index, slice_jpeg, the window decoder);
// when that succeeds, the same window decoded from the whole JPEG must succeed
// with the same pixels unless the whole JPEG is damaged outside the rows the
// index used: an index never yields wrong pixels.
#include <cstdint>
#include <cstring>
#include <span>

#include <opencv2/core.hpp>

#include "loader/datasets/image_decode.h"
#include "seedloader/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  if (size < 4) return 0;
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::uint32_t(data[i]) << (8 * i);
  if (n > size - 4) return 0;
  const std::span<const std::uint8_t> index(data + 4, n);
  const std::span<const std::uint8_t> jpeg(data + 4 + n, size - 4 - n);
  auto [reduction, channels, h] = fuzz::decode_choice(data, size);
  try {
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
