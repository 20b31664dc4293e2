// The colour and histogram ops of the augmentation policies, in torchvision's
// tensor arithmetic. Compiled with -ffp-contract=off: each float32 product and
// sum rounds on its own, as torch's separate tensor operations do.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "seedloader/error.h"
#include "transforms/augment_ops.h"

namespace seedloader {
namespace {

std::uint8_t truncate_u8(float v) {
  return static_cast<std::uint8_t>(std::clamp(v, 0.0f, 255.0f));
}

// Applies `f` to every byte: a pointwise op that does not mix channels.
template <typename F>
cv::Mat map_bytes(const cv::Mat& image, F f) {
  cv::Mat out(image.size(), image.type());
  const int width = image.cols * image.channels();
  for (int y = 0; y < image.rows; ++y) {
    const std::uint8_t* in = image.ptr<std::uint8_t>(y);
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    for (int i = 0; i < width; ++i) row[i] = f(in[i], i % image.channels());
  }
  return out;
}

// Per-channel lookup tables applied to every pixel.
cv::Mat apply_luts(const cv::Mat& image,
                   const std::vector<std::array<std::uint8_t, 256>>& luts) {
  return map_bytes(image, [&](std::uint8_t p, int c) { return luts[c][p]; });
}

std::vector<std::array<std::uint32_t, 256>> histograms(const cv::Mat& image) {
  std::vector<std::array<std::uint32_t, 256>> hist(image.channels());
  for (auto& h : hist) h.fill(0);
  const int channels = image.channels();
  for (int y = 0; y < image.rows; ++y) {
    const std::uint8_t* in = image.ptr<std::uint8_t>(y);
    for (int i = 0; i < image.cols * channels; ++i) ++hist[i % channels][in[i]];
  }
  return hist;
}

void check_image(const cv::Mat& image) {
  if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3)) {
    throw DataError(
        "augment op: the image must be uint8 with 1 or 3 channels, got type " +
        std::to_string(image.type()));
  }
}

}  // namespace

std::string_view augment_op_name(AugmentOp op) {
  static constexpr std::string_view kNames[kAugmentOpCount] = {
      "Identity",  "ShearX",     "ShearY",       "TranslateX", "TranslateY",
      "Rotate",    "Brightness", "Color",        "Contrast",   "Sharpness",
      "Posterize", "Solarize",   "AutoContrast", "Equalize"};
  return kNames[static_cast<int>(op)];
}

cv::Mat blend_f32(const cv::Mat& image, const cv::Mat& other, double factor) {
  const float a = static_cast<float>(factor);
  const float b = static_cast<float>(1.0 - factor);
  const int channels = image.channels();
  const bool per_pixel = other.channels() == 1;
  cv::Mat out(image.size(), image.type());
  for (int y = 0; y < image.rows; ++y) {
    const std::uint8_t* in = image.ptr<std::uint8_t>(y);
    const std::uint8_t* o = other.ptr<std::uint8_t>(y);
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    for (int i = 0; i < image.cols * channels; ++i) {
      const float mixed = a * static_cast<float>(in[i]) +
                          b * static_cast<float>(o[per_pixel ? i / channels : i]);
      row[i] = truncate_u8(mixed);
    }
  }
  return out;
}

cv::Mat grey_f32(const cv::Mat& image) {
  if (image.channels() == 1) return image.clone();
  cv::Mat out(image.size(), CV_8UC1);
  for (int y = 0; y < image.rows; ++y) {
    const cv::Vec3b* in = image.ptr<cv::Vec3b>(y);
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < image.cols; ++x) {
      const float r = 0.2989f * static_cast<float>(in[x][0]);
      const float g = 0.587f * static_cast<float>(in[x][1]);
      const float b = 0.114f * static_cast<float>(in[x][2]);
      row[x] = static_cast<std::uint8_t>(r + g + b);  // at most 255.0
    }
  }
  return out;
}

// torchvision's adjust_contrast: blend with the float32 mean of the luma.
cv::Mat contrast_f32(const cv::Mat& image, double factor) {
  const cv::Mat grey = grey_f32(image);
  std::uint64_t sum = 0;
  for (int y = 0; y < grey.rows; ++y) {
    const std::uint8_t* row = grey.ptr<std::uint8_t>(y);
    for (int x = 0; x < grey.cols; ++x) sum += row[x];
  }
  // torch sums in float32 (exact while the sum is below 2^24) and divides.
  const float mean = static_cast<float>(sum) / static_cast<float>(grey.total());
  const float a = static_cast<float>(factor);
  const float b = static_cast<float>(1.0 - factor);
  const float shift = b * mean;
  return map_bytes(image, [&](std::uint8_t p, int) {
    return truncate_u8(a * static_cast<float>(p) + shift);
  });
}

cv::Mat sharpness_blur(const cv::Mat& image) {
  cv::Mat out = image.clone();
  const int channels = image.channels();
  for (int y = 1; y + 1 < image.rows; ++y) {
    const std::uint8_t* rows[3] = {image.ptr<std::uint8_t>(y - 1),
                                   image.ptr<std::uint8_t>(y),
                                   image.ptr<std::uint8_t>(y + 1)};
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    for (int x = 1; x + 1 < image.cols; ++x) {
      for (int c = 0; c < channels; ++c) {
        int sum = 4 * rows[1][x * channels + c];
        for (const std::uint8_t* r : rows) {
          for (int dx = -1; dx <= 1; ++dx) sum += r[(x + dx) * channels + c];
        }
        // round(sum / 13): never a tie, so float32 convolution rounds the same.
        row[x * channels + c] = static_cast<std::uint8_t>((2 * sum + 13) / 26);
      }
    }
  }
  return out;
}

cv::Mat posterize(const cv::Mat& image, int bits) {
  const auto mask = static_cast<std::uint8_t>(0xff00 >> bits);
  return map_bytes(
      image, [mask](std::uint8_t p, int) { return static_cast<std::uint8_t>(p & mask); });
}

cv::Mat solarize(const cv::Mat& image, double threshold) {
  // torch compares the uint8 pixels with the threshold in float32.
  const float t = static_cast<float>(threshold);
  return map_bytes(image, [t](std::uint8_t p, int) {
    return static_cast<float>(p) >= t ? static_cast<std::uint8_t>(255 - p) : p;
  });
}

cv::Mat autocontrast(const cv::Mat& image) {
  std::vector<std::array<std::uint8_t, 256>> luts;
  for (const auto& hist : histograms(image)) {
    int lo = 0, hi = 255;
    while (lo < 255 && hist[lo] == 0) ++lo;
    while (hi > 0 && hist[hi] == 0) --hi;
    std::array<std::uint8_t, 256>& lut = luts.emplace_back();
    // A flat channel: torch's scale is infinite, and it keeps the channel.
    // torchvision's `255.0 / (max - min)` is the tensor's reciprocal times 255:
    // two roundings, which can carry the top value to 255.00002 where one
    // division would leave 254.99998.
    const float scale = hi > lo ? (1.0f / static_cast<float>(hi - lo)) * 255.0f : 1.0f;
    const float offset = hi > lo ? static_cast<float>(lo) : 0.0f;
    for (int p = 0; p < 256; ++p)
      lut[p] = truncate_u8((static_cast<float>(p) - offset) * scale);
  }
  return apply_luts(image, luts);
}

cv::Mat equalize(const cv::Mat& image) {
  std::vector<std::array<std::uint8_t, 256>> luts;
  for (const auto& hist : histograms(image)) {
    std::array<std::uint8_t, 256>& lut = luts.emplace_back();
    for (int p = 0; p < 256; ++p) lut[p] = static_cast<std::uint8_t>(p);
    // The step: the count of every non-empty bin but the last one, over 255.
    int last = 255;
    while (last > 0 && hist[last] == 0) --last;
    std::uint64_t below_last = 0;
    for (int p = 0; p < last; ++p) below_last += hist[p];
    const std::uint64_t step = below_last / 255;
    if (step == 0) continue;  // torchvision leaves the channel as it is
    std::uint64_t cumulative = 0;
    for (int p = 0; p < 256; ++p) {
      // The bin's value is the cumulative count before it, rounded, over step.
      lut[p] = static_cast<std::uint8_t>(
          std::min<std::uint64_t>((cumulative + step / 2) / step, 255));
      cumulative += hist[p];
    }
  }
  return apply_luts(image, luts);
}

cv::Mat apply_augment_op(const cv::Mat& image, AugmentOp op, double magnitude) {
  check_image(image);
  switch (op) {
    case AugmentOp::kIdentity:
      return image;
    case AugmentOp::kBrightness:
      return map_bytes(image,
                       [f = static_cast<float>(1.0 + magnitude)](std::uint8_t p, int) {
                         return truncate_u8(f * static_cast<float>(p));
                       });
    case AugmentOp::kColor:
      if (image.channels() == 1) return image.clone();
      return blend_f32(image, grey_f32(image), 1.0 + magnitude);
    case AugmentOp::kContrast:
      return contrast_f32(image, 1.0 + magnitude);
    case AugmentOp::kSharpness:
      if (image.cols <= 2 || image.rows <= 2) return image.clone();
      return blend_f32(image, sharpness_blur(image), 1.0 + magnitude);
    case AugmentOp::kPosterize:
      // int(magnitude), kept to the bits there are (NaN keeps none).
      return posterize(image,
                       magnitude >= 0 ? static_cast<int>(std::min(magnitude, 8.0)) : 0);
    case AugmentOp::kSolarize:
      return solarize(image, magnitude);
    case AugmentOp::kAutoContrast:
      return autocontrast(image);
    case AugmentOp::kEqualize:
      return equalize(image);
    default:
      return affine_op(image, op, magnitude);
  }
}

}  // namespace seedloader
