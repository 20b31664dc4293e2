// Random access into baseline JPEGs by MCU row, through restart markers.
//
// add_row_restarts() rewrites a baseline JPEG (sequential, Huffman-coded, 8-bit,
// not CMYK) losslessly, with libjpeg's transcoding API: its DCT coefficients are
// copied, not recompressed, so it decodes to the same pixels. The copy has a
// restart marker after every MCU row, and a RestartIndex says where each one is.
//
// slice_jpeg_rows() then builds, from such a JPEG and its index, a smaller JPEG
// holding only the MCU rows around a band of pixel rows: the original headers
// (application segments other than JFIF and Adobe's, and comments, left out)
// with the frame's height cut to the rows kept, the entropy-coded data from the
// first kept row's restart interval to the last's with its restart markers
// renumbered from RST0, and an end-of-image marker. A restart resets the
// entropy decoder (bit buffer and DC predictions), so the kept rows decode to
// the same coefficients as in the whole image; one more MCU row is kept above
// and below the band, because chroma upsampling reads the neighbouring row, so
// the band's pixels decode exactly as in the whole image, at every DCT scale.
//
// The index travels beside the image (seedloader-pack writes it as the sample's
// `.rst` member; format in encode_restart_index). Everything the slice relies on
// is checked against the JPEG first — the frame's geometry, the restart
// interval, every marker where the index puts it — and a mismatch is a
// DataError, never wrong pixels.
// Stateless apart from a per-thread output buffer; safe across threads and fork.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace seedloader {

struct RestartIndex {
  std::uint32_t mcu_rows = 0;  // MCU rows in the (single) scan
  std::uint32_t mcu_height =
      0;  // pixel rows per MCU row: 8 x the largest vertical sampling
  std::uint32_t scan_start = 0;  // offset of the first entropy-coded byte
  std::uint32_t scan_end = 0;    // offset of the end-of-image marker (FF D9)
  // markers[k]: offset of the restart marker (FF D0+k%8) after MCU row k, for
  // k < mcu_rows - 1.
  std::vector<std::uint32_t> markers;
};

// The `.rst` member's bytes: "SLRI", then little-endian u32s: format version
// (1), mcu_rows, mcu_height, scan_start, scan_end, and the mcu_rows - 1 marker
// offsets.
std::vector<std::uint8_t> encode_restart_index(const RestartIndex& index);
// The inverse. Throws DataError naming what is wrong when `bytes` is not such a
// member (bad magic or version, a length that disagrees with mcu_rows).
RestartIndex decode_restart_index(std::span<const std::uint8_t> bytes);

struct RestartedJpeg {
  std::vector<std::uint8_t> jpeg;
  RestartIndex index;
};

// `jpeg` rewritten with a restart marker after every MCU row, and its index; or
// nullopt with *why_not saying why it cannot be (progressive, arithmetic-coded,
// not 8-bit, CMYK/YCCK, more than one scan). Throws DataError for a JPEG that
// libjpeg cannot read.
std::optional<RestartedJpeg> add_row_restarts(std::span<const std::uint8_t> jpeg,
                                              std::string* why_not);

// Finds the restart markers of a JPEG written with one per MCU row (as
// add_row_restarts writes it). Throws DataError when it is not such a JPEG.
RestartIndex index_row_restarts(std::span<const std::uint8_t> jpeg);

struct JpegRows {
  // A JPEG of the rows [y, y + its height) of the original; it lives in a buffer
  // of the calling thread that the next slice_jpeg_rows() call reuses.
  std::span<const std::uint8_t> jpeg;
  int y = 0;  // the original's pixel row its first row is (a multiple of mcu_height)
};

// The MCU rows of `jpeg` that cover pixel rows [y0, y1), with one row of context
// on each side. Throws DataError when the JPEG and the index disagree.
// REQUIRES: 0 <= y0 < y1 <= the image's height.
JpegRows slice_jpeg_rows(std::span<const std::uint8_t> jpeg, const RestartIndex& index,
                         int y0, int y1);

}  // namespace seedloader
