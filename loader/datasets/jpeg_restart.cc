#include "loader/datasets/jpeg_restart.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <jpeglib.h>

#include "loader/datasets/jpeg_error.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

constexpr std::uint8_t kMagic[4] = {'S', 'L', 'R', 'I'};
constexpr std::uint32_t kVersion = 1;
// After the magic: version, mcu_rows, mcu_height, mcu_width, interval_mcus,
// intervals_per_row, scan_start, scan_end.
constexpr std::size_t kFixedWords = 8;
constexpr std::size_t kHeaderBytes = 4 + 4 * kFixedWords;

std::uint32_t read_le32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

void append_le32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint32_t be16(std::span<const std::uint8_t> b, std::size_t at) {
  return std::uint32_t(b[at]) << 8 | b[at + 1];
}

// What slicing needs of a JPEG's headers, read up to its first scan's header.
struct Frame {
  std::uint32_t width = 0, height = 0;
  std::size_t height_at = 0;  // offset of the frame header's two height bytes
  int components = 0;
  int max_h = 1, max_v = 1;
  std::uint32_t restart_interval = 0;  // MCUs, from DRI; 0 when absent
  int scan_components = 0;
  std::size_t scan_start = 0;  // the first byte after the scan header
  // The segments a slice copies, [begin, end) each: SOI, and the tables, frame,
  // restart interval and scan headers, JFIF and Adobe segments; not the other
  // application segments (Exif, ICC profiles, ...) or comments.
  std::vector<std::pair<std::size_t, std::size_t>> kept;

  std::uint32_t mcu_height() const { return components == 1 ? 8 : 8u * max_v; }
  std::uint32_t mcu_width() const { return components == 1 ? 8 : 8u * max_h; }
  std::uint32_t mcus_per_row() const { return (width + mcu_width() - 1) / mcu_width(); }
  std::uint32_t mcu_rows() const { return (height + mcu_height() - 1) / mcu_height(); }
};

std::string hex_marker(std::uint8_t m) {
  static const char digits[] = "0123456789ABCDEF";
  return std::string("FF") + digits[m >> 4] + digits[m & 15];
}

DataError bad(const std::string& why) { return DataError("JPEG restart index: " + why); }

Frame read_frame(std::span<const std::uint8_t> b) {
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) throw bad("not a JPEG (no SOI)");
  Frame f;
  f.kept.emplace_back(0, 2);
  bool have_frame = false;
  std::size_t at = 2;
  for (;;) {
    if (at + 4 > b.size()) throw bad("the headers end before a scan");
    if (b[at] != 0xFF) throw bad("no marker at offset " + std::to_string(at));
    while (at + 4 <= b.size() && b[at + 1] == 0xFF) ++at;  // fill bytes
    if (at + 4 > b.size()) throw bad("the headers end before a scan");
    const std::uint8_t m = b[at + 1];
    const std::size_t end = at + 2 + be16(b, at + 2);
    if (be16(b, at + 2) < 2 || end > b.size())
      throw bad("segment " + hex_marker(m) + " runs past the end");
    if (m == 0xC0 || m == 0xC1) {
      if (end - at < 12) throw bad("a short frame header");
      if (b[at + 4] != 8) throw bad("not an 8-bit JPEG");
      f.height_at = at + 5;
      f.height = be16(b, at + 5);
      f.width = be16(b, at + 7);
      f.components = b[at + 9];
      if (f.components < 1 || end != at + 10 + 3 * std::size_t(f.components))
        throw bad("a frame header of the wrong length");
      for (int c = 0; c < f.components; ++c) {
        const std::uint8_t hv = b[at + 11 + 3 * c];
        f.max_h = std::max(f.max_h, hv >> 4);
        f.max_v = std::max(f.max_v, hv & 15);
      }
      if (f.width == 0 || f.height == 0 || f.max_h > 4 || f.max_v > 4)
        throw bad("a frame of size 0 or with sampling above 4");
      have_frame = true;
    } else if (m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      throw bad("not a baseline JPEG (progressive, lossless or arithmetic-coded)");
    } else if (m == 0xDD) {
      if (end - at != 6) throw bad("a restart interval segment of the wrong length");
      f.restart_interval = be16(b, at + 4);
    } else if (m == 0xDA) {
      if (!have_frame) throw bad("a scan before the frame header");
      f.scan_components = b[at + 4];
      f.scan_start = end;
      f.kept.emplace_back(at, end);
      return f;
    }
    if (m == 0xDB || m == 0xC0 || m == 0xC1 || m == 0xC4 || m == 0xDD || m == 0xE0 ||
        m == 0xEE)
      f.kept.emplace_back(at, end);
    at = end;
  }
}

// The frame's geometry against the index's, and the index against itself and
// the file: every marker in order inside the scan data, the scan ending in EOI.
void check_index(std::span<const std::uint8_t> b, const Frame& f, const RestartIndex& x) {
  if (f.scan_components != f.components)
    throw bad("the first scan does not hold every component");
  if (x.mcu_height != f.mcu_height() || x.mcu_width != f.mcu_width() ||
      x.mcu_rows != f.mcu_rows())
    throw bad("it gives " + std::to_string(x.mcu_rows) + " MCU rows of " +
              std::to_string(x.mcu_width) + "x" + std::to_string(x.mcu_height) +
              " pixels, the image has " + std::to_string(f.mcu_rows()) + " of " +
              std::to_string(f.mcu_width()) + "x" + std::to_string(f.mcu_height()));
  if (f.restart_interval != x.interval_mcus ||
      std::uint64_t{x.interval_mcus} * x.intervals_per_row != f.mcus_per_row())
    throw bad("the JPEG's restart interval is " + std::to_string(f.restart_interval) +
              " MCUs, the index's " + std::to_string(x.interval_mcus) + " x " +
              std::to_string(x.intervals_per_row) + " per row of " +
              std::to_string(f.mcus_per_row()));
  if (x.scan_start != f.scan_start)
    throw bad("its scan starts at " + std::to_string(x.scan_start) + ", the JPEG's at " +
              std::to_string(f.scan_start));
  if (x.markers.size() + 1 != std::uint64_t{x.mcu_rows} * x.intervals_per_row)
    throw bad("it lists the wrong number of markers");
  if (std::size_t(x.scan_end) + 2 > b.size() || b[x.scan_end] != 0xFF ||
      b[x.scan_end + 1] != 0xD9)
    throw bad("no end-of-image marker at offset " + std::to_string(x.scan_end));
  std::uint64_t after = x.scan_start;
  for (const std::uint32_t m : x.markers) {
    if (m < after || std::uint64_t{m} + 2 > x.scan_end)
      throw bad("its marker offsets are out of order");
    after = std::uint64_t{m} + 2;
  }
}

// The restart markers of the scan in order from its first byte, so that an
// index entry is checked to be the k-th marker, not one of the same number mod 8
// elsewhere (every 8th marker is numbered alike; an index shifted by 8 would
// slice, without a decoding error, another part of the image). One forward pass
// for a whole slice: memchr for FF, then FF 00 (a stuffed byte), FF FF (fill
// before a marker) and FF D0..D7 are the scan data; any other marker before the
// end of what the slice copies is a DataError, as is FF D9 before scan_end.
// REQUIRES: check_index() passed (markers in order, inside the scan, EOI at
// scan_end).
class MarkerWalk {
 public:
  MarkerWalk(std::span<const std::uint8_t> b, const RestartIndex& x)
      : b_(b), x_(x), at_(x.scan_start) {}

  // Restart marker k (after interval k) is the scan's k-th and at markers[k].
  // REQUIRES: k < markers.size(), and k >= every k passed before.
  void check(std::uint32_t k) {
    if (k < met_) return;  // checked already: met_ is k + 1 after check(k)
    const std::uint32_t want = x_.markers[k];
    for (;;) {
      const std::size_t p = next_restart(std::size_t{want} + 1);
      if (p == kNone)
        throw bad("restart marker " + std::to_string(k) + " is not at offset " +
                  std::to_string(want) + ": the scan holds only " + std::to_string(met_) +
                  " restart markers up to there");
      const std::uint32_t n = met_++;
      if (n == k && p == want) break;
      if (n == k)
        throw bad("restart marker " + std::to_string(k) + " is not at offset " +
                  std::to_string(want) + " but at offset " + std::to_string(p));
      if (p == want)
        throw bad("restart marker " + std::to_string(k) + " is not at offset " +
                  std::to_string(want) + ", which holds restart marker " +
                  std::to_string(n));
    }
    if (b_[want + 1] != 0xD0 + (k & 7))
      throw bad("restart marker " + std::to_string(k) + " at offset " +
                std::to_string(want) + " is " + hex_marker(b_[want + 1]) + ", not " +
                hex_marker(static_cast<std::uint8_t>(0xD0 + (k & 7))));
  }

  // The last interval, from the last marker to scan_end, holds no marker.
  // REQUIRES: every marker checked (check(markers.size() - 1), if any).
  void check_last() {
    const std::size_t p = next_restart(x_.scan_end);
    if (p != kNone)
      throw bad("a restart marker at offset " + std::to_string(p) +
                " in the last interval (the index lists " +
                std::to_string(x_.markers.size()) + ")");
  }

 private:
  static constexpr std::size_t kNone = ~std::size_t{0};

  // The offset of the next restart marker whose FF lies before `limit`, or
  // kNone when there is none, leaving at_ after it (or at limit).
  std::size_t next_restart(std::size_t limit) {
    while (at_ < limit) {
      const auto* ff = static_cast<const std::uint8_t*>(
          std::memchr(b_.data() + at_, 0xFF, limit - at_));
      if (!ff) break;
      const std::size_t p = static_cast<std::size_t>(ff - b_.data());
      // p + 1 < b_.size(): p < limit <= scan_end, and b_[scan_end + 1] is D9.
      const std::uint8_t next = b_[p + 1];
      if (next == 0x00) {
        at_ = p + 2;
      } else if (next == 0xFF) {
        at_ = p + 1;
      } else if (next >= 0xD0 && next <= 0xD7) {
        at_ = p + 2;
        return p;
      } else {
        throw bad("marker " + hex_marker(next) + " at offset " + std::to_string(p) +
                  " inside the scan data");
      }
    }
    at_ = std::max(at_, limit);
    return kNone;
  }

  std::span<const std::uint8_t> b_;
  const RestartIndex& x_;
  std::size_t at_;         // where the walk resumes: inside the scan data
  std::uint32_t met_ = 0;  // restart markers met: the next one is number met_
};

// The restart interval add_restarts writes, in MCUs: the divisor of the MCUs in
// a row nearest a sixteenth of them (at least 1), among those from half to twice
// that; else the whole row (at most libjpeg's 65535). About 16 intervals a row
// bound what a crop decodes past its window to about a sixteenth of the width
// each side. Reads only what jpeg_read_header set.
unsigned interval_for(const jpeg_decompress_struct* src) {
  int max_h = 1;
  for (int c = 0; c < src->num_components; ++c)
    max_h = std::max(max_h, src->comp_info[c].h_samp_factor);
  const unsigned mcu_w =
      src->num_components == 1 ? 8u : 8u * static_cast<unsigned>(max_h);
  const unsigned per_row = (src->image_width + mcu_w - 1) / mcu_w;
  const unsigned target = std::max(1u, per_row / 16);
  unsigned best = 0;
  const auto distance = [&](unsigned d) { return d > target ? d - target : target - d; };
  for (unsigned d = std::max(1u, target / 2); d <= 2 * target; ++d) {
    if (per_row % d == 0 && (best == 0 || distance(d) < distance(best))) best = d;
  }
  return best != 0 ? best : std::min(per_row, 65535u);
}

// Phase function of the transcoder (plain C state only between setjmp and
// longjmp). Sets *why_not and returns true when the JPEG is not one to rewrite.
bool transcode(jpeg_decompress_struct* src, jpeg_compress_struct* dst,
               JpegErrorManager* err, std::span<const std::uint8_t> in,
               unsigned char** out, unsigned long* out_size, const char** why_not) {
  if (setjmp(err->jump)) return false;
  jpeg_mem_src(src, in.data(), static_cast<unsigned long>(in.size()));
  jpeg_read_header(src, TRUE);
  if (src->progressive_mode)
    *why_not = "progressive";
  else if (src->arith_code)
    *why_not = "arithmetic-coded";
  else if (src->data_precision != 8)
    *why_not = "not 8-bit";
  else if (src->jpeg_color_space == JCS_CMYK || src->jpeg_color_space == JCS_YCCK)
    *why_not = "CMYK";
  if (*why_not) return true;
  jvirt_barray_ptr* coefficients = jpeg_read_coefficients(src);
  jpeg_mem_dest(dst, out, out_size);
  jpeg_copy_critical_parameters(src, dst);
  dst->restart_interval = interval_for(src);
  dst->optimize_coding = TRUE;
  jpeg_write_coefficients(dst, coefficients);
  jpeg_finish_compress(dst);
  jpeg_finish_decompress(src);
  return true;
}

}  // namespace

std::vector<std::uint8_t> encode_restart_index(const RestartIndex& x) {
  std::vector<std::uint8_t> out(std::begin(kMagic), std::end(kMagic));
  for (const std::uint32_t v :
       {kVersion, x.mcu_rows, x.mcu_height, x.mcu_width, x.interval_mcus,
        x.intervals_per_row, x.scan_start, x.scan_end})
    append_le32(out, v);
  for (const std::uint32_t m : x.markers) append_le32(out, m);
  return out;
}

RestartIndex decode_restart_index(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes ||
      !std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin()))
    throw bad("not a restart index (no SLRI header)");
  if (read_le32(&bytes[4]) != kVersion)
    throw bad("format version " + std::to_string(read_le32(&bytes[4])) + " is not 1");
  RestartIndex x;
  x.mcu_rows = read_le32(&bytes[8]);
  x.mcu_height = read_le32(&bytes[12]);
  x.mcu_width = read_le32(&bytes[16]);
  x.interval_mcus = read_le32(&bytes[20]);
  x.intervals_per_row = read_le32(&bytes[24]);
  x.scan_start = read_le32(&bytes[28]);
  x.scan_end = read_le32(&bytes[32]);
  const std::size_t words = (bytes.size() - kHeaderBytes) / 4;
  const std::uint64_t intervals = std::uint64_t{x.mcu_rows} * x.intervals_per_row;
  if ((bytes.size() - kHeaderBytes) % 4 != 0 || intervals == 0 || words != intervals - 1)
    throw bad(std::to_string(bytes.size()) + " bytes do not hold the markers of " +
              std::to_string(x.mcu_rows) + " MCU rows of " +
              std::to_string(x.intervals_per_row) + " intervals");
  x.markers.resize(words);
  for (std::size_t k = 0; k < words; ++k)
    x.markers[k] = read_le32(&bytes[kHeaderBytes + 4 * k]);
  return x;
}

std::optional<RestartedJpeg> add_restarts(std::span<const std::uint8_t> jpeg,
                                          std::string* why_not) {
  JpegErrorManager err{};
  jpeg_decompress_struct src{};
  jpeg_compress_struct dst{};
  src.err = jpeg_strict_errors(&err);
  dst.err = src.err;
  jpeg_create_decompress(&src);
  jpeg_create_compress(&dst);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  const char* reason = nullptr;
  const bool ok = transcode(&src, &dst, &err, jpeg, &out, &out_size, &reason);
  jpeg_destroy_compress(&dst);
  jpeg_destroy_decompress(&src);
  const std::unique_ptr<unsigned char, void (*)(void*)> owned(out, &std::free);
  if (!ok) throw DataError(std::string("corrupt JPEG: ") + err.message);
  if (reason) {
    if (why_not) *why_not = reason;
    return std::nullopt;
  }
  RestartedJpeg r;
  r.jpeg.assign(out, out + out_size);
  r.index = index_restarts(r.jpeg);
  return r;
}

RestartIndex index_restarts(std::span<const std::uint8_t> b) {
  const Frame f = read_frame(b);
  if (b.size() > 0xFFFFFFFFu) throw bad("a JPEG above 4 GiB");
  if (f.restart_interval == 0 || f.mcus_per_row() % f.restart_interval != 0)
    throw bad("the JPEG's restart interval (" + std::to_string(f.restart_interval) +
              " MCUs) does not divide its rows of " + std::to_string(f.mcus_per_row()));
  RestartIndex x;
  x.mcu_rows = f.mcu_rows();
  x.mcu_height = f.mcu_height();
  x.mcu_width = f.mcu_width();
  x.interval_mcus = f.restart_interval;
  x.intervals_per_row = f.mcus_per_row() / f.restart_interval;
  x.scan_start = static_cast<std::uint32_t>(f.scan_start);
  // Scan data holds FF only as FF 00 (a stuffed byte), fill FF FF, or a marker.
  for (std::size_t at = f.scan_start;;) {
    const auto* ff =
        static_cast<const std::uint8_t*>(std::memchr(b.data() + at, 0xFF, b.size() - at));
    if (!ff || ff + 1 >= b.data() + b.size())
      throw bad("the scan has no end-of-image marker");
    at = static_cast<std::size_t>(ff - b.data());
    const std::uint8_t next = b[at + 1];
    if (next == 0x00) {
      at += 2;
    } else if (next == 0xFF) {
      at += 1;
    } else if (next >= 0xD0 && next <= 0xD7) {
      if (next != 0xD0 + (x.markers.size() & 7))
        throw bad("restart markers out of sequence");
      x.markers.push_back(static_cast<std::uint32_t>(at));
      at += 2;
    } else if (next == 0xD9) {
      x.scan_end = static_cast<std::uint32_t>(at);
      break;
    } else {
      throw bad("a marker inside the scan data (more than one scan?)");
    }
  }
  check_index(b, f, x);
  return x;
}

JpegSlice slice_jpeg(std::span<const std::uint8_t> b, const RestartIndex& x, int x0,
                     int y0, int x1, int y1) {
  const Frame f = read_frame(b);
  check_index(b, f, x);
  const std::uint32_t per_row = x.intervals_per_row;
  const std::uint32_t span =
      x.interval_mcus * x.mcu_width;  // an interval's pixel columns
  // The window's MCU rows and intervals, with one more MCU on each side for
  // chroma upsampling.
  const auto mcu_row = [&](int y) {
    return static_cast<std::uint32_t>(y) / x.mcu_height;
  };
  const auto interval = [&](std::int64_t px) {
    const std::int64_t clamped = std::clamp<std::int64_t>(px, 0, f.width - 1);
    return static_cast<std::uint32_t>(clamped / span);
  };
  const std::uint32_t r0 = mcu_row(y0) > 0 ? mcu_row(y0) - 1 : 0;
  const std::uint32_t r1 = std::min(x.mcu_rows - 1, mcu_row(y1 - 1) + 1);
  const std::uint32_t c0 = interval(std::int64_t{x0} - x.mcu_width);
  const std::uint32_t c1 = interval(std::int64_t{x1} - 1 + x.mcu_width);

  thread_local std::vector<std::uint8_t> out;
  out.clear();
  std::size_t height_at = 0;
  for (const auto& [begin, end] : f.kept) {
    if (f.height_at >= begin && f.height_at < end)
      height_at = out.size() + (f.height_at - begin);
    out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(begin),
               b.begin() + static_cast<std::ptrdiff_t>(end));
  }
  // The frame header holds the height, then the width, each two bytes.
  const std::uint32_t height =
      r1 == x.mcu_rows - 1 ? f.height - r0 * x.mcu_height : (r1 - r0 + 1) * x.mcu_height;
  const std::uint32_t width =
      c1 == per_row - 1 ? f.width - c0 * span : (c1 - c0 + 1) * span;
  out[height_at] = static_cast<std::uint8_t>(height >> 8);
  out[height_at + 1] = static_cast<std::uint8_t>(height);
  out[height_at + 2] = static_cast<std::uint8_t>(width >> 8);
  out[height_at + 3] = static_cast<std::uint8_t>(width);
  // Each kept interval's data, from after the marker before it to its own
  // (both checked to be the scan's (k-1)-th and k-th markers: the one before
  // only at a row's first kept interval, since elsewhere it ended the interval
  // just copied; the last interval up to EOI), then a restart marker of the
  // slice's own numbering.
  MarkerWalk walk(b, x);
  std::uint32_t written = 0;
  for (std::uint32_t r = r0; r <= r1; ++r) {
    for (std::uint32_t c = c0; c <= c1; ++c) {
      const std::uint32_t k = r * per_row + c;
      if (k > 0 && c == c0) walk.check(k - 1);
      if (k < x.markers.size())
        walk.check(k);
      else
        walk.check_last();
      const std::size_t from = k == 0 ? x.scan_start : x.markers[k - 1] + 2;
      const std::size_t to = k < x.markers.size() ? x.markers[k] : x.scan_end;
      if (written > 0) {
        out.push_back(0xFF);
        out.push_back(static_cast<std::uint8_t>(0xD0 + ((written - 1) & 7)));
      }
      out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(from),
                 b.begin() + static_cast<std::ptrdiff_t>(to));
      ++written;
    }
  }
  out.push_back(0xFF);
  out.push_back(0xD9);
  return {out, static_cast<int>(c0 * span), static_cast<int>(r0 * x.mcu_height)};
}

}  // namespace seedloader
