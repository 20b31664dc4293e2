// Region-of-interest JPEG decoding with libjpeg(-turbo)'s own API: only the rows
// and columns a crop needs go through the IDCT and colour conversion.
// jpeg_skip_scanlines passes over rows above the window, jpeg_crop_scanline
// narrows each row to the window (widened left to an iMCU boundary), and DCT
// scaling decodes at 1/2, 1/4 or 1/8 size. Decoding stops after the window's
// last row: the entropy-coded rows below it (a tenth of the work for an average
// crop of a small image, more for a large one) are never read. A truncated file
// is still an error whatever the window, because one must end its scan data
// with the end-of-image marker (which entropy-coded data cannot contain) and
// the check looks for it first; damage inside the scan data below the window,
// which no decoded pixel depends on, goes unnoticed. Every libjpeg warning
// within what is decoded is an error, as in image_decode.cc.
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
