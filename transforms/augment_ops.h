// The image operations of the automatic augmentation policies (TrivialAugmentWide,
// RandAugment), each given its magnitude as torchvision's `_apply_op` receives it,
// and computed as torchvision 0.14 computes it on a uint8 tensor: the affine ops
// map pixels through the inverse matrix with nearest-neighbour sampling and fill
// outside with 0; the colour ops blend in float32 and truncate to uint8; Posterize,
// Solarize, AutoContrast and Equalize are integer (or exactly representable float)
// arithmetic. Everything is scalar code, so no CPU's SIMD path changes a byte.
// Images are HWC uint8 with 1 or 3 channels (RGB). Pure functions; thread-safe.
#pragma once

#include <array>
#include <string_view>

#include "seedloader/transforms/transform.h"

namespace seedloader {

// In torchvision's `_augmentation_space` order, which the policies index by draw.
enum class AugmentOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
};
inline constexpr int kAugmentOpCount = 14;

// "ShearX", ... as torchvision names them.
std::string_view augment_op_name(AugmentOp op);

// Applies `op` with `magnitude` (shear as tan of the angle, translation in pixels,
// truncated toward zero, rotation in degrees counter-clockwise, colour ops as
// factor - 1, Posterize as bits kept (truncated), Solarize as threshold; ignored
// by the others). Returns a new image, or `image` itself for Identity.
// Throws DataError for an image that is not uint8 with 1 or 3 channels.
cv::Mat apply_augment_op(const cv::Mat& image, AugmentOp op, double magnitude);

// The single operations, for tests and reuse. Each returns a new image.
// `inverse` maps output pixel coordinates, relative to the image centre, to
// input ones: torchvision's inverse affine matrix [a, b, c, d, e, f].
cv::Mat warp_nearest(const cv::Mat& image, const std::array<double, 6>& inverse);
// ShearX/Y, TranslateX/Y and Rotate (augment_geometry.cc). Throws ConfigError
// for another op.
cv::Mat affine_op(const cv::Mat& image, AugmentOp op, double magnitude);
// out = trunc(clamp(f * image + (1 - f) * other)) in float32, as torchvision's
// _blend; `other` has the image's size and 1 channel, or the image's channels.
cv::Mat blend_f32(const cv::Mat& image, const cv::Mat& other, double factor);
// Luma (0.2989 R + 0.587 G + 0.114 B in float32, truncated), one channel.
cv::Mat grey_f32(const cv::Mat& image);
cv::Mat posterize(const cv::Mat& image, int bits);  // REQUIRES: 0 <= bits <= 8
cv::Mat solarize(const cv::Mat& image, double threshold);
cv::Mat autocontrast(const cv::Mat& image);
cv::Mat equalize(const cv::Mat& image);
// The 3x3 smoothing (centre weight 5, the rest 1, over 13) of the interior,
// rounded, with the border left as it is.
cv::Mat sharpness_blur(const cv::Mat& image);

}  // namespace seedloader
