#include "loader/datasets/image_decode.h"

#include "loader/datasets/jpeg_region.h"
#include "loader/datasets/jpeg_restart.h"
#include "loader/datasets/pnm_tiff.h"

#include <turbojpeg.h>
#include <webp/decode.h>
#include <zlib.h>

#include <cctype>
#include <cstring>
#include <memory>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

#include "loader/datasets/byte_order.h"
#include "seedloader/datasets/image_options.h"
#include "seedloader/error.h"
#include "seedloader/transforms/transform.h"

namespace seedloader {

// A decoded image may be as large as the header cap lets it; the transforms'
// own cap must not be smaller, or images the dataset accepts would fail them.
static_assert(kMaxTransformPixels == kDefaultMaxPixels);
namespace {

// The per-thread decompressor: creating one per image costs more than decoding a
// thumbnail. After a failure it is replaced, since libjpeg may leave it mid-stream.
// Forked children get their own copy of the parent's (idle) handle.
struct JpegHandleDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
std::unique_ptr<void, JpegHandleDeleter>& jpeg_slot() {
  thread_local std::unique_ptr<void, JpegHandleDeleter> handle;
  return handle;
}

tjhandle jpeg_handle() {
  auto& slot = jpeg_slot();
  if (!slot) slot.reset(tjInitDecompress());
  if (!slot) throw DataError("cannot create a JPEG decompressor");
  return slot.get();
}

// Throws DataError with turbojpeg's message and drops the handle.
[[noreturn]] void jpeg_failure(const std::string& what) {
  const std::string message = what + tjGetErrorStr2(jpeg_handle());
  jpeg_slot().reset();
  throw DataError(message);
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kPnm:
      return "PNM";
    case ImageFormat::kTiff:
      return "TIFF";
    default:
      return "WebP";
  }
}

void probe_jpeg(std::span<const std::uint8_t> b, ImageHeader& h) {
  int subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(jpeg_handle(), b.data(), b.size(), &h.width, &h.height,
                          &subsamp, &colorspace) != 0) {
    jpeg_failure("bad JPEG header: ");
  }
  h.cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
}

// Adobe CMYK JPEGs store inverted inks: channel value = k - (255 - ink) * k / 256.
cv::Mat cmyk_to_rgb(const cv::Mat& cmyk, int channels) {
  cv::Mat rgb(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    const std::uint8_t* src = cmyk.ptr<std::uint8_t>(y);
    std::uint8_t* dst = rgb.ptr<std::uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, src += 4, dst += 3) {
      const int k = src[3];
      for (int c = 0; c < 3; ++c)
        dst[c] = static_cast<std::uint8_t>(k - (((255 - src[c]) * k) >> 8));
    }
  }
  if (channels == 3) return rgb;
  cv::Mat grey;
  cv::cvtColor(rgb, grey, cv::COLOR_RGB2GRAY);
  return grey;
}

constexpr std::uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

// Every chunk inside the file with a matching CRC, IHDR first, IEND last.
void check_png_chunks(std::span<const std::uint8_t> b) {
  std::size_t pos = 8;
  bool first = true;
  while (true) {
    if (b.size() - pos < 12) throw DataError("truncated PNG: no IEND chunk");
    const std::uint32_t length = load_be32(&b[pos]);
    if (length > b.size() - pos - 12) {
      throw DataError("truncated PNG: a chunk at byte " + std::to_string(pos) +
                      " runs past the end of the file");
    }
    const std::uint8_t* type = &b[pos + 4];
    if (first && std::memcmp(type, "IHDR", 4) != 0) throw DataError("PNG without IHDR");
    first = false;
    const std::uint32_t want = load_be32(&b[pos + 8 + length]);
    const auto got = static_cast<std::uint32_t>(crc32(0L, type, length + 4));
    if (want != got) {
      throw DataError("PNG chunk " + std::string(reinterpret_cast<const char*>(type), 4) +
                      " at byte " + std::to_string(pos) + " has a bad CRC");
    }
    if (std::memcmp(type, "IEND", 4) == 0) return;
    pos += 12 + length;
  }
}

void probe_webp(std::span<const std::uint8_t> b, ImageHeader& h) {
  if (b.size() < 30) throw DataError("truncated WebP header");
  const std::uint8_t* chunk = &b[12];
  if (std::memcmp(chunk, "VP8 ", 4) == 0) {
    h.width = (b[26] | (b[27] << 8)) & 0x3fff;
    h.height = (b[28] | (b[29] << 8)) & 0x3fff;
  } else if (std::memcmp(chunk, "VP8L", 4) == 0) {
    const std::uint32_t bits = load_le32(&b[21]);
    h.width = static_cast<int>((bits & 0x3fff) + 1);
    h.height = static_cast<int>(((bits >> 14) & 0x3fff) + 1);
  } else if (std::memcmp(chunk, "VP8X", 4) == 0) {
    h.width = static_cast<int>(load_le24(&b[24]) + 1);
    h.height = static_cast<int>(load_le24(&b[27]) + 1);
  } else {
    throw DataError("unknown WebP chunk");
  }
}

cv::Mat decode_jpeg(std::span<const std::uint8_t> b, const ImageHeader& h, int reduction,
                    int channels) {
  const tjscalingfactor factor{1, reduction};
  const int w = TJSCALED(h.width, factor);
  const int ht = TJSCALED(h.height, factor);
  const int format = h.cmyk ? TJPF_CMYK : channels == 1 ? TJPF_GRAY : TJPF_RGB;
  cv::Mat out(ht, w, h.cmyk ? CV_8UC4 : channels == 1 ? CV_8UC1 : CV_8UC3);
  const int flags = TJFLAG_STOPONWARNING;
  if (tjDecompress2(jpeg_handle(), b.data(), b.size(), out.data, w,
                    static_cast<int>(out.step), ht, format, flags) != 0) {
    jpeg_failure("corrupt or truncated JPEG: ");
  }
  return h.cmyk ? cmyk_to_rgb(out, channels) : out;
}

}  // namespace

bool is_image_extension(std::string_view ext) {
  std::string lower(ext);
  if (!lower.empty() && lower[0] == '.') lower.erase(0, 1);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* known :
       {"jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp"}) {
    if (lower == known) return true;
  }
  return false;
}

ImageHeader probe_image(std::span<const std::uint8_t> b, std::uint64_t max_pixels) {
  if (b.empty()) throw DataError("empty file (0 bytes)");
  ImageHeader h{};
  if (b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) {
    h.format = ImageFormat::kJpeg;
    probe_jpeg(b, h);
  } else if (b.size() >= 8 && std::memcmp(b.data(), kPngSignature, 8) == 0) {
    h.format = ImageFormat::kPng;
    if (b.size() < 24 || std::memcmp(&b[12], "IHDR", 4) != 0) {
      throw DataError("truncated PNG header");
    }
    const std::uint32_t w = load_be32(&b[16]);
    const std::uint32_t ht = load_be32(&b[20]);
    if (w > 0x7fffffff || ht > 0x7fffffff) throw DataError("PNG size out of range");
    h.width = static_cast<int>(w);
    h.height = static_cast<int>(ht);
  } else if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') {
    h.format = ImageFormat::kBmp;
    if (b.size() < 26) throw DataError("truncated BMP header");
    const auto w = static_cast<std::int32_t>(load_le32(&b[18]));
    const auto ht = static_cast<std::int32_t>(load_le32(&b[22]));
    if (w <= 0 || ht == 0 || ht == INT32_MIN) throw DataError("BMP size out of range");
    h.width = w;
    h.height = ht < 0 ? -ht : ht;
  } else if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 &&
             std::memcmp(&b[8], "WEBP", 4) == 0) {
    h.format = ImageFormat::kWebp;
    probe_webp(b, h);
  } else if (is_pnm(b)) {
    h.format = ImageFormat::kPnm;
    const cv::Size size = probe_pnm(b);
    h.width = size.width;
    h.height = size.height;
  } else if (is_tiff(b)) {
    h.format = ImageFormat::kTiff;
    const cv::Size size = probe_tiff(b, max_pixels);
    h.width = size.width;
    h.height = size.height;
  } else {
    throw DataError(
        "not an image: unknown signature (JPEG, PNG, BMP, WebP, PNM or TIFF expected)");
  }
  if (h.width <= 0 || h.height <= 0) {
    throw DataError(std::string(format_name(h.format)) + " header gives a zero size");
  }
  const std::uint64_t pixels = static_cast<std::uint64_t>(h.width) * h.height;
  if (pixels > max_pixels) {
    throw DataError(std::string(format_name(h.format)) + " header claims " +
                    std::to_string(h.width) + "x" + std::to_string(h.height) + " = " +
                    std::to_string(pixels) + " pixels, above the cap of " +
                    std::to_string(max_pixels));
  }
  return h;
}

namespace {

// OpenCV's WebP decoder claims a buffer only when libwebp can read its features;
// one it does not claim goes on to OpenCV's other decoders, and Debian's DICOM
// one (GDCM) aborts the process on such bytes. So the check is made here first.
void check_webp_features(std::span<const std::uint8_t> b) {
  WebPBitstreamFeatures features;
  if (b.size() < 32 || WebPGetFeatures(b.data(), b.size(), &features) != VP8_STATUS_OK) {
    throw DataError("corrupt WebP: libwebp cannot read its features");
  }
}

}  // namespace

cv::Mat decode_image(std::span<const std::uint8_t> b, const ImageHeader& h, int reduction,
                     int channels) {
  if (reduction != 1 && reduction != 2 && reduction != 4 && reduction != 8) {
    throw DataError("reduction must be 1, 2, 4 or 8");
  }
  if (h.format == ImageFormat::kJpeg) return decode_jpeg(b, h, reduction, channels);
  if (h.format == ImageFormat::kPng) check_png_chunks(b);
  if (h.format == ImageFormat::kWebp) check_webp_features(b);
  const bool pil_pixels = h.format == ImageFormat::kPnm || h.format == ImageFormat::kTiff;
  cv::Mat image;
  if (h.format == ImageFormat::kPnm) {
    image = decode_pnm(b, channels);
  } else if (h.format == ImageFormat::kTiff) {
    image = decode_tiff(b, channels);
  } else {
    const cv::Mat raw(1, static_cast<int>(b.size()), CV_8UC1,
                      const_cast<std::uint8_t*>(b.data()));
    try {
      image = cv::imdecode(raw, channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    } catch (const cv::Exception& e) {
      // OpenCV asserts on some headers (e.g. a BMP height above its own limit)
      // instead of returning an empty image.
      throw DataError(std::string("corrupt ") + format_name(h.format) +
                      ": OpenCV refuses it: " + e.err);
    }
    if (image.empty()) {
      throw DataError(std::string("corrupt ") + format_name(h.format) +
                      ": OpenCV cannot decode it");
    }
  }
  if (image.cols != h.width || image.rows != h.height) {
    throw DataError(std::string(format_name(h.format)) + " decoded to " +
                    std::to_string(image.cols) + "x" + std::to_string(image.rows) +
                    ", its header says " + std::to_string(h.width) + "x" +
                    std::to_string(h.height));
  }
  if (channels == 3 && !pil_pixels) cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  if (reduction > 1) {
    cv::Mat small;
    cv::resize(image, small,
               cv::Size((h.width + reduction - 1) / reduction,
                        (h.height + reduction - 1) / reduction),
               0, 0, cv::INTER_AREA);
    return small;
  }
  return image;
}

cv::Mat EncodedImage::decode_region(int reduction, cv::Rect region,
                                    cv::Rect* crop) const {
  if (header_.format != ImageFormat::kJpeg || header_.cmyk) {
    return ImageSource::decode_region(reduction, region, crop);
  }
  if (restart_index_.empty()) {
    JpegRegion window = decode_jpeg_region(bytes_, reduction, region, channels_);
    *crop = window.crop;
    return window.pixels;
  }
  // The intervals around the window alone, as a JPEG whose first pixel is the
  // original's (slice.x, slice.y): multiples of the MCU size, so of every
  // reduction too.
  const JpegSlice slice =
      slice_jpeg(bytes_, decode_restart_index(restart_index_), region.x, region.y,
                 region.x + region.width, region.y + region.height);
  cv::Rect within = region;
  within.x -= slice.x;
  within.y -= slice.y;
  JpegRegion window = decode_jpeg_region(slice.jpeg, reduction, within, channels_);
  *crop = window.crop;
  return window.pixels;
}

}  // namespace seedloader
