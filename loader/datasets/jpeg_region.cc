#include "loader/datasets/jpeg_region.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "loader/datasets/jpeg_error.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

using ErrorManager = JpegErrorManager;

struct Window {
  JDIMENSION x = 0, y = 0, width = 0, height = 0;  // in reduced coordinates
  JDIMENSION xoffset = 0, out_width = 0;           // after jpeg_crop_scanline
};

// Phase 1: header, scaling, start, and the column crop. Returns false on error.
bool start(jpeg_decompress_struct* cinfo, ErrorManager* err,
           std::span<const std::uint8_t> bytes, int reduction, int channels,
           cv::Rect region, Window* w, std::size_t* scan_start) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(cinfo, TRUE);
  *scan_start = bytes.size() - cinfo->src->bytes_in_buffer;
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned>(reduction);
  cinfo->out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(cinfo);
  // Floor the start and ceil the end, clipped: the same mapping as scale_region.
  const auto r = static_cast<JDIMENSION>(reduction);
  const JDIMENSION x0 = static_cast<JDIMENSION>(region.x) / r;
  const JDIMENSION y0 = static_cast<JDIMENSION>(region.y) / r;
  JDIMENSION x1 = (static_cast<JDIMENSION>(region.x + region.width) + r - 1) / r;
  JDIMENSION y1 = (static_cast<JDIMENSION>(region.y + region.height) + r - 1) / r;
  if (x1 > cinfo->output_width) x1 = cinfo->output_width;
  if (y1 > cinfo->output_height) y1 = cinfo->output_height;
  *w = Window{x0, y0, x1 - x0, y1 - y0, x0, x1 - x0};
  jpeg_crop_scanline(cinfo, &w->xoffset, &w->out_width);
  return true;
}

// Whether an end-of-image marker (FF D9) follows the first scan's data. Scan
// data stuffs every FF it holds (FF 00) or follows it with a restart marker
// (FF D0-D7), so it cannot hold one; a file cut short has none, unless the cut
// falls after it. Bytes after the marker are allowed, as libjpeg allows them.
// Searched from the end, where a whole file has it.
bool ends_its_scans(std::span<const std::uint8_t> bytes, std::size_t scan_start) {
  for (std::size_t i = bytes.size(); i >= scan_start + 2; --i) {
    if (bytes[i - 2] == 0xFF && bytes[i - 1] == 0xD9) return true;
  }
  return false;
}

// Phase 2: skip to the window, read its rows into `out`, stop.
bool read_rows(jpeg_decompress_struct* cinfo, ErrorManager* err, const Window& w,
               unsigned char* out, std::size_t stride) {
  if (setjmp(err->jump)) return false;
  if (w.y > 0) jpeg_skip_scanlines(cinfo, w.y);
  while (cinfo->output_scanline < w.y + w.height) {
    JSAMPROW row = out + (cinfo->output_scanline - w.y) * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  // The rows below the window are not needed: stop here.
  jpeg_abort_decompress(cinfo);
  return true;
}

// Owns the decompressor; destroyed on every path.
class Decompressor {
 public:
  Decompressor() {
    cinfo_.err = jpeg_strict_errors(&err_);
    jpeg_create_decompress(&cinfo_);
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo_); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  jpeg_decompress_struct* cinfo() { return &cinfo_; }
  ErrorManager* err() { return &err_; }
  [[noreturn]] void fail() const {
    throw DataError(std::string("corrupt or truncated JPEG: ") + err_.message);
  }

 private:
  jpeg_decompress_struct cinfo_{};
  ErrorManager err_{};
};

// This thread's pixel buffer, `bytes` long, as one continuous row. Reused from
// call to call, except while a caller still holds the last result (its
// reference count says so): then a new one is made and the old one left alone.
cv::Mat thread_buffer(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw DataError("a decoded window of " + std::to_string(bytes) +
                    " bytes is above what one buffer holds");
  }
  thread_local cv::Mat store;
  if (store.u && store.u->refcount > 1) store = cv::Mat();
  if (store.empty() || store.total() < bytes) {
    store.create(1, static_cast<int>(std::max<std::size_t>(bytes, 1)), CV_8U);
  }
  return store.colRange(0, static_cast<int>(bytes));
}

}  // namespace

JpegRegion decode_jpeg_region(std::span<const std::uint8_t> bytes, int reduction,
                              cv::Rect region, int channels) {
  Decompressor d;
  Window w;
  std::size_t scan_start = 0;
  if (!start(d.cinfo(), d.err(), bytes, reduction, channels, region, &w, &scan_start)) {
    d.fail();
  }
  if (!ends_its_scans(bytes, scan_start)) {
    throw DataError(
        "corrupt or truncated JPEG: no end-of-image marker after its scan data");
  }
  JpegRegion result;
  const std::size_t stride = std::size_t(w.out_width) * channels;
  result.pixels = thread_buffer(stride * w.height).reshape(channels, int(w.height));
  if (!read_rows(d.cinfo(), d.err(), w, result.pixels.data, result.pixels.step)) {
    d.fail();
  }
  result.crop = cv::Rect(static_cast<int>(w.x - w.xoffset), 0, static_cast<int>(w.width),
                         static_cast<int>(w.height));
  return result;
}

}  // namespace seedloader
