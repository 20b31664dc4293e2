#include "loader/datasets/jpeg_region.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "seedloader/error.h"

namespace seedloader {
namespace {

// libjpeg reports errors by calling error_exit, which must not return: it
// long-jumps back to the phase that is running. Only plain C state lives in the
// frames between setjmp and longjmp (see the two phase functions below).
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1), e.g. "premature end of data", become errors: a truncated
// JPEG otherwise decodes to a partly grey image without complaint.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

struct Window {
  JDIMENSION x = 0, y = 0, width = 0, height = 0;  // in reduced coordinates
  JDIMENSION xoffset = 0, out_width = 0;           // after jpeg_crop_scanline
};

// Phase 1: header, scaling, start, and the column crop. Returns false on error.
bool start(jpeg_decompress_struct* cinfo, ErrorManager* err,
           std::span<const std::uint8_t> bytes, int reduction, int channels,
           cv::Rect region, Window* w) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(cinfo, TRUE);
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

// Phase 2: skip to the window, read its rows into `out`, skip to the end, finish.
// `scratch` holds one output row (out_width pixels).
bool read_rows(jpeg_decompress_struct* cinfo, ErrorManager* err, const Window& w,
               unsigned char* out, std::size_t stride, unsigned char* scratch) {
  if (setjmp(err->jump)) return false;
  if (w.y > 0) jpeg_skip_scanlines(cinfo, w.y);
  while (cinfo->output_scanline < w.y + w.height) {
    JSAMPROW row = out + (cinfo->output_scanline - w.y) * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  // Skipping straight to the end would mark the image finished without reading
  // its data, so skip to the last row and decode that one: the entropy-coded data
  // is then read to the end and truncation is noticed.
  if (cinfo->output_scanline + 1 < cinfo->output_height) {
    jpeg_skip_scanlines(cinfo, cinfo->output_height - 1 - cinfo->output_scanline);
  }
  if (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = scratch;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

// Owns the decompressor; destroyed on every path.
class Decompressor {
 public:
  Decompressor() {
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = on_error;
    err_.pub.emit_message = on_message;
    err_.message[0] = '\0';
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
  if (!start(d.cinfo(), d.err(), bytes, reduction, channels, region, &w)) d.fail();
  JpegRegion result;
  const std::size_t stride = std::size_t(w.out_width) * channels;
  result.pixels = thread_buffer(stride * w.height).reshape(channels, int(w.height));
  thread_local std::vector<unsigned char> scratch;
  scratch.resize(stride);
  if (!read_rows(d.cinfo(), d.err(), w, result.pixels.data, result.pixels.step,
                 scratch.data())) {
    d.fail();
  }
  result.crop = cv::Rect(static_cast<int>(w.x - w.xoffset), 0, static_cast<int>(w.width),
                         static_cast<int>(w.height));
  return result;
}

}  // namespace seedloader
