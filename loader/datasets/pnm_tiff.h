// Netpbm (PBM, PGM, PPM: P1 .. P6) and TIFF, the image files torchvision's
// ImageFolder lists beyond JPEG, PNG, BMP and WebP, decoded to the 8-bit pixels
// its default loader (PIL's Image.open(...).convert("RGB"), Pillow 9) sees:
//  - Netpbm is parsed here, since OpenCV reads samples below a maxval of 255
//    unscaled and shifts 16-bit ones: 8-bit samples become
//    round(v * 255 / maxval); 16-bit PPM samples round(v * 255 / maxval);
//    16-bit PGM samples round(v * 65535 / maxval) clipped to 255 (PIL opens
//    them as 32-bit integers and convert() clips); PBM bits 1 -> 0, 0 -> 255.
//    Values above maxval count as maxval.
//  - TIFF goes through OpenCV (libtiff) unchanged, then 16-bit grey is clipped
//    to 255 and 16-bit colour keeps its high byte, as PIL does; alpha is dropped.
// Grey becomes RGB by repeating it; RGB becomes grey (channels 1) as
// cv::COLOR_RGB2GRAY does for the other formats. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include <opencv2/core.hpp>

namespace seedloader {

// True when the bytes start with a Netpbm magic number (P1 .. P6).
bool is_pnm(std::span<const std::uint8_t> bytes);
// True when the bytes start with a TIFF byte-order mark and 42.
bool is_tiff(std::span<const std::uint8_t> bytes);

// Width and height from the header. Throw DataError when it cannot be read.
cv::Size probe_pnm(std::span<const std::uint8_t> bytes);
// TIFF also throws when its first directory holds a sizing tag (ImageWidth,
// ImageLength, RowsPerStrip, TileWidth, TileLength) twice or not as one SHORT
// or LONG, or when one strip or tile covers more than `max_pixels`: OpenCV
// allocates a whole strip, whatever the image's height.
cv::Size probe_tiff(std::span<const std::uint8_t> bytes, std::uint64_t max_pixels);

// Decodes to CV_8UC3 (RGB) or CV_8UC1 (channels 1). Throw DataError for a
// truncated or corrupt file, and for TIFF when OpenCV was built without it.
cv::Mat decode_pnm(std::span<const std::uint8_t> bytes, int channels);
cv::Mat decode_tiff(std::span<const std::uint8_t> bytes, int channels);

}  // namespace seedloader
