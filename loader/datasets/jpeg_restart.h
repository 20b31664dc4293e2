// Random access into baseline JPEGs through restart markers.
//
// add_restarts() rewrites a baseline JPEG (sequential, Huffman-coded, 8-bit, not
// CMYK) losslessly, with libjpeg's transcoding API: its DCT coefficients are
// copied, not recompressed, so it decodes to the same pixels. The copy has a
// restart marker every `interval_mcus` MCUs, a divisor of the MCUs in a row
// (about a sixteenth of them when there is one near that, else the whole row),
// so that each MCU row is cut into intervals at the same columns; a
// RestartIndex says where each marker is.
//
// slice_jpeg() then builds, from such a JPEG and its index, a smaller JPEG
// holding only the intervals around a window: the original headers
// (application segments other than JFIF and Adobe's, and comments, left out)
// with the frame's width and height cut to the intervals kept, each kept row's
// kept intervals in order, a restart marker after each (numbered from RST0), and
// an end-of-image marker. A restart resets the entropy decoder (bit buffer and
// DC predictions), so each interval decodes to the same coefficients wherever
// it is; one more MCU row above and below the window and one more MCU column on
// each side are kept, because chroma upsampling reads the neighbouring samples,
// so the window's pixels decode exactly as in the whole image, at every DCT
// scale.
//
// The index travels beside the image (seedloader-pack writes it as the sample's
// `.rst` member; format in encode_restart_index). Everything the slice relies on
// is checked against the JPEG first — the frame's geometry, the restart
// interval, the offsets in order inside the scan, EOI at scan_end, and each
// marker the slice cuts at being the scan's k-th restart marker (FF D0+k%8),
// counted in one pass over the scan data from its start up to the last byte the
// slice copies, which must hold no other marker — and a mismatch is a
// DataError, never wrong pixels. Counting, not only the number mod 8, is what
// refuses an index pointing 8 (or 16, ...) intervals away. The pass costs a
// memchr over at most the whole scan, under 1% of decoding it.
// Stateless apart from a per-thread output buffer; safe across threads and fork.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace seedloader {

struct RestartIndex {
  std::uint32_t mcu_rows = 0;       // MCU rows in the (single) scan
  std::uint32_t mcu_height = 0;     // pixels: 8 x the largest vertical sampling
  std::uint32_t mcu_width = 0;      // pixels: 8 x the largest horizontal sampling
  std::uint32_t interval_mcus = 0;  // MCUs per restart interval
  std::uint32_t intervals_per_row = 0;
  std::uint32_t scan_start = 0;  // offset of the first entropy-coded byte
  std::uint32_t scan_end = 0;    // offset of the end-of-image marker (FF D9)
  // markers[k]: offset of the restart marker (FF D0+k%8) after interval k (in
  // raster order: in MCU row k / intervals_per_row), for every interval but the
  // last.
  std::vector<std::uint32_t> markers;

  std::uint32_t intervals() const { return mcu_rows * intervals_per_row; }
};

// The `.rst` member's bytes: "SLRI", then little-endian u32s: format version
// (1), mcu_rows, mcu_height, mcu_width, interval_mcus, intervals_per_row,
// scan_start, scan_end, and the intervals() - 1 marker offsets.
std::vector<std::uint8_t> encode_restart_index(const RestartIndex& index);
// The inverse. Throws DataError naming what is wrong when `bytes` is not such a
// member (bad magic or version, a length that disagrees with its intervals).
RestartIndex decode_restart_index(std::span<const std::uint8_t> bytes);

struct RestartedJpeg {
  std::vector<std::uint8_t> jpeg;
  RestartIndex index;
};

// `jpeg` rewritten with restart markers as above, and its index; or nullopt
// with *why_not saying why it cannot be (progressive, arithmetic-coded, not
// 8-bit, CMYK/YCCK). Throws DataError for a JPEG that libjpeg cannot read.
std::optional<RestartedJpeg> add_restarts(std::span<const std::uint8_t> jpeg,
                                          std::string* why_not);

// Finds the restart markers of a JPEG whose restart interval divides its MCU
// rows (as add_restarts writes it). Throws DataError when it is not such a JPEG.
RestartIndex index_restarts(std::span<const std::uint8_t> jpeg);

struct JpegSlice {
  // A JPEG of the original's pixels from (x, y) on; it lives in a buffer of the
  // calling thread that the next slice_jpeg() call reuses.
  std::span<const std::uint8_t> jpeg;
  int x = 0;  // a multiple of the MCU width
  int y = 0;  // a multiple of the MCU height
};

// The intervals of `jpeg` that cover pixels [x0, x1) x [y0, y1), with one MCU of
// context on each side. Throws DataError, naming the marker and offsets, when
// the JPEG and the index disagree (as above).
// REQUIRES: 0 <= x0 < x1 <= width, 0 <= y0 < y1 <= height.
JpegSlice slice_jpeg(std::span<const std::uint8_t> jpeg, const RestartIndex& index,
                     int x0, int y0, int x1, int y1);

}  // namespace seedloader
