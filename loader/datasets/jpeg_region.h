// Region-of-interest JPEG decoding with libjpeg(-turbo)'s own API: only the rows
// and columns a crop needs go through the IDCT and colour conversion.
// jpeg_skip_scanlines passes over rows above the window, jpeg_crop_scanline
// narrows each row to the window (widened left to an iMCU boundary), and DCT
// scaling decodes at 1/2, 1/4 or 1/8 size. Rows below the window are still
// skipped through to the end of the image, so a truncated or corrupt file is an
// error even when the damage lies outside the window: every libjpeg warning is
// treated as an error, as in image_decode.cc.
// The pixels land in a buffer of the calling thread that the next call reuses
// once no cv::Mat refers to it any more, so decoding allocates nothing once the
// buffer has grown. Safe across threads and fork.
#pragma once

#include <cstdint>
#include <span>

#include <opencv2/core.hpp>

namespace seedloader {

struct JpegRegion {
  cv::Mat pixels;  // the decoded window (RGB or grey, CV_8U)
  cv::Rect crop;   // where the requested region lies inside `pixels`
};

// Decodes `region` (in full-size pixel coordinates) of a YCbCr or greyscale JPEG
// at 1/reduction scale (1, 2, 4, 8) into `channels` (1 or 3) channels. The
// region maps into the reduced image as scale_region() does (floor the start,
// ceil the end). Throws DataError for corrupt or truncated input.
// REQUIRES: the JPEG is not CMYK/YCCK; region lies within the image.
JpegRegion decode_jpeg_region(std::span<const std::uint8_t> bytes, int reduction,
                              cv::Rect region, int channels);

}  // namespace seedloader
