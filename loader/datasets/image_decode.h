// Decoding of encoded images (JPEG, PNG, BMP, WebP, and Netpbm and TIFF through
// pnm_tiff.h) from bytes in memory, with the
// size read from the header first so a pixel cap is enforced before any pixel
// buffer is allocated.
//
// JPEG goes through libturbojpeg rather than cv::imdecode: OpenCV's decoder
// turns libjpeg warnings ("premature end of data") into a silently grey-filled
// image, while TJFLAG_STOPONWARNING makes every warning an error, so a truncated
// or corrupt JPEG is always a DataError. It also gives DCT-domain scaling
// (1/2, 1/4, 1/8), which reduced-scale decoding uses. PNG chunks are walked and
// their CRCs checked before OpenCV decodes, so a broken CRC or a truncated file
// is an error too. CMYK JPEGs (a few in ImageNet) are converted as OpenCV does
// (Adobe's inverted CMYK). Output is RGB (3 channels) or grey (1 channel), CV_8U.
// Stateless apart from a per-thread turbojpeg handle; safe across threads and
// fork.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "seedloader/datasets/image_options.h"  // kDefaultMaxPixels
#include "seedloader/transforms/transform.h"

namespace seedloader {

enum class ImageFormat { kJpeg, kPng, kBmp, kWebp, kPnm, kTiff };

struct ImageHeader {
  ImageFormat format;
  int width = 0;
  int height = 0;
  bool cmyk = false;  // a CMYK or YCCK JPEG (Adobe's inverted CMYK)
};

// True for torchvision's IMG_EXTENSIONS: jpg, jpeg, png, ppm, bmp, pgm, tif,
// tiff, webp (any case, with or without the leading dot).
bool is_image_extension(std::string_view ext);

// Reads the format and size from the first bytes. Throws DataError for an empty
// or unknown file, a header it cannot read, a zero size, or width x height above
// max_pixels.
ImageHeader probe_image(std::span<const std::uint8_t> bytes, std::uint64_t max_pixels);

// Decodes at 1/reduction scale (1, 2, 4, 8) to `channels` (1 or 3) channels;
// the result is ceil(width / reduction) x ceil(height / reduction). Throws
// DataError for any corrupt or truncated input.
cv::Mat decode_image(std::span<const std::uint8_t> bytes, const ImageHeader& header,
                     int reduction, int channels);

// An ImageSource over encoded bytes that the caller keeps alive.
class EncodedImage final : public ImageSource {
 public:
  // Probes the header (may throw DataError, see probe_image). `restart_index`:
  // the JPEG's restart index as seedloader-pack stores it (jpeg_restart.h), or
  // empty; the caller keeps it alive too.
  EncodedImage(std::span<const std::uint8_t> bytes, std::uint64_t max_pixels,
               int channels, std::span<const std::uint8_t> restart_index = {})
      : bytes_(bytes),
        restart_index_(restart_index),
        header_(probe_image(bytes, max_pixels)),
        channels_(channels) {}
  cv::Size size() const override { return {header_.width, header_.height}; }
  cv::Mat decode(int reduction) const override {
    return decode_image(bytes_, header_, reduction, channels_);
  }
  // JPEG (not CMYK): only the window's rows and columns (see jpeg_region.h);
  // with a restart index, entropy-decoding only the restart intervals around
  // the window (jpeg_restart.h).
  cv::Mat decode_region(int reduction, cv::Rect region, cv::Rect* crop) const override;

 private:
  std::span<const std::uint8_t> bytes_;
  std::span<const std::uint8_t> restart_index_;
  ImageHeader header_;
  int channels_;
};

}  // namespace seedloader
