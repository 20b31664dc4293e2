// Fuzzes image probing and decoding: probe_image, decode_image at a reduction
// and channel count chosen from a hash of the input, and, for a JPEG that is
// not CMYK, decode_jpeg_region over a window inside the probed size. The input
// is a plain image file (JPEG, PNG, BMP, WebP, PNM or TIFF).
#include <algorithm>
#include <cstdint>
#include <span>

#include "loader/datasets/image_decode.h"
#include "loader/datasets/jpeg_region.h"
#include "seedloader/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Fails the run (a finding) when a decoder's output breaks its documented contract.
void check(bool ok) {
  if (!ok) __builtin_trap();
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::span<const std::uint8_t> bytes(data, size);
  auto [reduction, channels, h] = fuzz::decode_choice(data, size);
  try {
    const ImageHeader header = probe_image(bytes, /*max_pixels=*/1 << 22);
    check(header.width > 0 && header.height > 0);
    const cv::Mat full = decode_image(bytes, header, reduction, channels);
    check(full.cols == ceil_div(header.width, reduction) &&
          full.rows == ceil_div(header.height, reduction) &&
          full.channels() == channels && full.depth() == CV_8U);
    if (header.format == ImageFormat::kJpeg && !header.cmyk) {
      const fuzz::Window w = fuzz::window_from(h, header.width, header.height);
      const JpegRegion r =
          decode_jpeg_region(bytes, reduction, {w.x, w.y, w.width, w.height}, channels);
      check(r.pixels.channels() == channels && r.pixels.depth() == CV_8U);
      check((r.crop & cv::Rect(0, 0, r.pixels.cols, r.pixels.rows)) == r.crop);
    }
  } catch (const Error&) {
  }
  return 0;
}
