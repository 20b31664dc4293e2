#include "loader/datasets/pnm_tiff.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <iterator>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "loader/datasets/byte_order.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

// ---- Netpbm ----

bool is_space(std::uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Moves past whitespace and '#' comments (to the end of their line).
void skip_space(std::span<const std::uint8_t> b, std::size_t& pos) {
  while (pos < b.size()) {
    if (b[pos] == '#') {
      while (pos < b.size() && b[pos] != '\n' && b[pos] != '\r') ++pos;
    } else if (is_space(b[pos])) {
      ++pos;
    } else {
      return;
    }
  }
}

// A decimal number after optional whitespace; `what` names it in errors.
std::uint32_t read_number(std::span<const std::uint8_t> b, std::size_t& pos,
                          const char* what) {
  skip_space(b, pos);
  if (pos >= b.size()) throw DataError(std::string("truncated PNM: no ") + what);
  if (b[pos] < '0' || b[pos] > '9') {
    throw DataError(std::string("corrupt PNM: ") + what + " at byte " +
                    std::to_string(pos) + " is not a number");
  }
  std::uint64_t v = 0;
  while (pos < b.size() && b[pos] >= '0' && b[pos] <= '9') {
    v = v * 10 + (b[pos++] - '0');
    if (v > INT_MAX) throw DataError(std::string("PNM ") + what + " out of range");
  }
  return static_cast<std::uint32_t>(v);
}

struct PnmHeader {
  int kind = 0;  // the digit of the magic number: 1 .. 6
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t maxval = 1;
  std::size_t data = 0;  // where the raster starts
};

PnmHeader parse_pnm(std::span<const std::uint8_t> b) {
  PnmHeader h;
  h.kind = b[1] - '0';
  std::size_t pos = 2;
  h.width = read_number(b, pos, "width");
  h.height = read_number(b, pos, "height");
  if (h.width == 0 || h.height == 0) throw DataError("PNM header gives a zero size");
  if (h.kind != 1 && h.kind != 4) {
    h.maxval = read_number(b, pos, "maxval");
    if (h.maxval < 1 || h.maxval > 65535) {
      throw DataError("PNM maxval " + std::to_string(h.maxval) + " is not in [1, 65535]");
    }
  }
  if (h.kind >= 4) {
    // One whitespace byte separates the header from a binary raster.
    if (pos >= b.size() || !is_space(b[pos])) {
      throw DataError("truncated PNM: no whitespace before the raster");
    }
    ++pos;
  }
  h.data = pos;
  return h;
}

// The 8-bit value PIL gives each possible sample (see the header comment):
// Python's round(v / maxval * top) in doubles, ties to even (std::nearbyint in
// the default rounding mode), capped at top, then 16-bit grey clipped to 255.
std::vector<std::uint8_t> sample_table(const PnmHeader& h) {
  const double m = h.maxval;
  const bool grey16 = (h.kind == 2 || h.kind == 5) && h.maxval > 255;
  const double top = grey16 ? 65535.0 : 255.0;
  std::vector<std::uint8_t> table(h.maxval > 255 ? 65536 : 256);
  for (std::size_t v = 0; v < table.size(); ++v) {
    const double scaled = std::min(top, std::nearbyint(static_cast<double>(v) / m * top));
    table[v] = static_cast<std::uint8_t>(std::min(scaled, 255.0));
  }
  return table;
}

void pnm_truncated(std::uint64_t got, std::uint64_t want) {
  throw DataError("truncated PNM: the raster ends after " + std::to_string(got) + " of " +
                  std::to_string(want) + " samples");
}

// ---- TIFF ----

struct TiffReader {
  std::span<const std::uint8_t> b;
  bool big_endian;
  std::uint32_t u16(std::size_t at) const {
    return big_endian ? (std::uint32_t{b[at]} << 8) | b[at + 1]
                      : b[at] | (std::uint32_t{b[at + 1]} << 8);
  }
  std::uint32_t u32(std::size_t at) const {
    return big_endian ? load_be32(&b[at]) : load_le32(&b[at]);
  }
};

// Whether this OpenCV decodes TIFF: built without libtiff it has no reader.
bool opencv_reads_tiff() {
  static const bool reads = [] {
    try {
      std::vector<std::uint8_t> tiny;
      if (!cv::imencode(".tiff", cv::Mat(1, 1, CV_8UC1, cv::Scalar(7)), tiny))
        return false;
      return !cv::imdecode(tiny, cv::IMREAD_UNCHANGED).empty();
    } catch (const cv::Exception&) {
      return false;
    }
  }();
  return reads;
}

// RGB or grey (CV_8UC3 / CV_8UC1) to the channel count asked for.
cv::Mat to_channels(cv::Mat image, int channels) {
  if (channels == 3 && image.channels() == 1) {
    cv::cvtColor(image, image, cv::COLOR_GRAY2RGB);
  } else if (channels == 1 && image.channels() == 3) {
    cv::cvtColor(image, image, cv::COLOR_RGB2GRAY);
  }
  return image;
}

}  // namespace

bool is_pnm(std::span<const std::uint8_t> b) {
  return b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6';
}

bool is_tiff(std::span<const std::uint8_t> b) {
  return b.size() >= 4 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 42 && b[3] == 0) ||
                           (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && b[3] == 42));
}

cv::Size probe_pnm(std::span<const std::uint8_t> b) {
  const PnmHeader h = parse_pnm(b);
  return {static_cast<int>(h.width), static_cast<int>(h.height)};
}

cv::Size probe_tiff(std::span<const std::uint8_t> b, std::uint64_t max_pixels) {
  const TiffReader r{b, b[0] == 'M'};
  if (b.size() < 8) throw DataError("truncated TIFF header");
  const std::uint32_t ifd = r.u32(4);
  if (ifd < 8 || ifd > b.size() - 2) {
    throw DataError("corrupt TIFF: the first directory's offset " + std::to_string(ifd) +
                    " lies outside the file");
  }
  const std::uint32_t entries = r.u16(ifd);
  if (entries > (b.size() - ifd - 2) / 12) {
    throw DataError("truncated TIFF: the first directory's " + std::to_string(entries) +
                    " entries run past the end of the file");
  }
  // The tags that size the image and the buffer libtiff's readers fill:
  // ImageWidth, ImageLength, RowsPerStrip, TileWidth, TileLength.
  constexpr std::uint32_t kTags[] = {256, 257, 278, 322, 323};
  constexpr const char* kNames[] = {"ImageWidth", "ImageLength", "RowsPerStrip",
                                    "TileWidth", "TileLength"};
  std::int64_t value[5] = {-1, -1, -1, -1, -1};
  for (std::uint32_t i = 0; i < entries; ++i) {
    const std::size_t at = ifd + 2 + 12 * std::size_t{i};
    const auto* tag = std::find(std::begin(kTags), std::end(kTags), r.u16(at));
    if (tag == std::end(kTags)) continue;
    const auto k = static_cast<std::size_t>(tag - std::begin(kTags));
    const std::string name = std::string("corrupt TIFF: ") + kNames[k];
    // A directory holds a tag once; libtiff and this probe must not read two
    // different sizes from one file.
    if (value[k] >= 0) throw DataError(name + " appears twice in the first directory");
    const std::uint32_t type = r.u16(at + 2);
    if (r.u32(at + 4) != 1) throw DataError(name + " does not hold exactly one value");
    if (type == 3) {
      value[k] = r.u16(at + 8);  // SHORT
    } else if (type == 4) {
      value[k] = r.u32(at + 8);  // LONG
    } else {
      throw DataError(name + " has type " + std::to_string(type) +
                      " (SHORT or LONG expected)");
    }
  }
  const std::int64_t width = value[0];
  const std::int64_t height = value[1];
  if (width < 0 || height < 0) {
    throw DataError("corrupt TIFF: no ImageWidth and ImageLength in the first directory");
  }
  if (width > INT_MAX || height > INT_MAX) throw DataError("TIFF size out of range");
  // OpenCV allocates one strip (width x RowsPerStrip) or one tile at a time, at
  // up to 4 bytes a sample; RowsPerStrip is not clipped to the image's height,
  // so a strip may claim far more than the image. It is held to the cap on the
  // image's own pixels. A missing RowsPerStrip, or 2^32 - 1, means one strip.
  const bool tiled = value[3] >= 0 || value[4] >= 0;
  std::int64_t strip_width = width;
  std::int64_t strip_rows = value[2];
  if (tiled) {
    strip_width = value[3] > 0 ? value[3] : width;
    strip_rows = value[4];
  }
  if (strip_rows <= 0 || (!tiled && strip_rows == 0xffffffffLL)) strip_rows = height;
  const auto strip_pixels =
      static_cast<std::uint64_t>(strip_width) * static_cast<std::uint64_t>(strip_rows);
  if (strip_pixels > max_pixels) {
    throw DataError(std::string("TIFF ") + (tiled ? "tiles" : "strips") + " of " +
                    std::to_string(strip_width) + "x" + std::to_string(strip_rows) +
                    " = " + std::to_string(strip_pixels) +
                    " pixels are above the cap of " + std::to_string(max_pixels));
  }
  return {static_cast<int>(width), static_cast<int>(height)};
}

cv::Mat decode_pnm(std::span<const std::uint8_t> b, int channels) {
  const PnmHeader h = parse_pnm(b);
  const int w = static_cast<int>(h.width);
  const int ht = static_cast<int>(h.height);
  const int per_pixel = h.kind == 3 || h.kind == 6 ? 3 : 1;
  cv::Mat image(ht, w, per_pixel == 3 ? CV_8UC3 : CV_8UC1);
  const std::uint64_t samples = std::uint64_t{h.width} * h.height * per_pixel;
  std::size_t pos = h.data;
  if (h.kind == 4) {
    const std::size_t row_bytes = (h.width + 7) / 8;
    if ((b.size() - pos) / row_bytes < h.height) {
      pnm_truncated((b.size() - pos) / row_bytes * w, samples);
    }
    for (int y = 0; y < ht; ++y) {
      const std::uint8_t* row = &b[pos + y * row_bytes];
      std::uint8_t* out = image.ptr<std::uint8_t>(y);
      for (int x = 0; x < w; ++x) out[x] = (row[x / 8] >> (7 - x % 8)) & 1 ? 0 : 255;
    }
  } else if (h.kind == 1) {
    std::uint8_t* out = image.data;  // continuous: freshly allocated
    for (std::uint64_t i = 0; i < samples; ++i) {
      skip_space(b, pos);
      if (pos >= b.size()) pnm_truncated(i, samples);
      if (b[pos] != '0' && b[pos] != '1') {
        throw DataError("corrupt PBM: byte " + std::to_string(pos) + " is not 0 or 1");
      }
      out[i] = b[pos++] == '1' ? 0 : 255;
    }
  } else {
    const std::vector<std::uint8_t> table = sample_table(h);
    const std::uint32_t top = h.maxval;
    std::uint8_t* out = image.data;
    if (h.kind == 2 || h.kind == 3) {
      for (std::uint64_t i = 0; i < samples; ++i) {
        skip_space(b, pos);
        if (pos >= b.size()) pnm_truncated(i, samples);
        const std::size_t at = pos;
        const std::uint32_t v = read_number(b, pos, "sample");
        if (v > top) {
          throw DataError("corrupt PNM: the sample at byte " + std::to_string(at) + ", " +
                          std::to_string(v) + " above maxval " + std::to_string(top));
        }
        out[i] = table[v];
      }
    } else {
      const std::size_t bytes = h.maxval > 255 ? 2 : 1;
      if ((b.size() - pos) / bytes < samples) {
        pnm_truncated((b.size() - pos) / bytes, samples);
      }
      for (std::uint64_t i = 0; i < samples; ++i, pos += bytes) {
        const std::uint32_t v =
            bytes == 2 ? (std::uint32_t{b[pos]} << 8) | b[pos + 1] : b[pos];
        out[i] = table[v];
      }
    }
  }
  return to_channels(std::move(image), channels);
}

cv::Mat decode_tiff(std::span<const std::uint8_t> b, int channels) {
  if (!opencv_reads_tiff()) {
    throw DataError("cannot decode TIFF: this OpenCV was built without a TIFF reader");
  }
  const cv::Mat raw(1, static_cast<int>(b.size()), CV_8UC1,
                    const_cast<std::uint8_t*>(b.data()));
  cv::Mat image;
  try {
    image = cv::imdecode(raw, cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw DataError(std::string("corrupt TIFF: OpenCV refuses it: ") + e.err);
  }
  if (image.empty()) throw DataError("corrupt TIFF: OpenCV cannot decode it");
  if (image.depth() != CV_8U && image.depth() != CV_16U) {
    throw DataError("TIFF with samples of OpenCV depth " + std::to_string(image.depth()) +
                    " is not read (8- and 16-bit integer samples are)");
  }
  if (image.depth() == CV_16U) {
    // PIL: 16-bit grey is an integer image that convert("RGB") clips; 16-bit
    // colour is unpacked to its high bytes.
    cv::Mat eight(image.size(), CV_MAKETYPE(CV_8U, image.channels()));
    const bool grey = image.channels() == 1;
    for (int y = 0; y < image.rows; ++y) {
      const std::uint16_t* in = image.ptr<std::uint16_t>(y);
      std::uint8_t* out = eight.ptr<std::uint8_t>(y);
      for (int i = 0; i < image.cols * image.channels(); ++i) {
        out[i] = static_cast<std::uint8_t>(grey ? std::min<std::uint16_t>(in[i], 255)
                                                : in[i] >> 8);
      }
    }
    image = eight;
  }
  if (image.channels() == 4) {
    cv::cvtColor(image, image, cv::COLOR_BGRA2RGB);
  } else if (image.channels() == 3) {
    cv::cvtColor(image, image, cv::COLOR_BGR2RGB);
  } else if (image.channels() != 1) {
    throw DataError("TIFF with " + std::to_string(image.channels()) +
                    " channels is not read");
  }
  return to_channels(std::move(image), channels);
}

}  // namespace seedloader
