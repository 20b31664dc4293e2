// The affine ops of the augmentation policies: torchvision's inverse affine matrix
// (in double, as its Python computes it) and the nearest-neighbour warp of its
// tensor path (a float32 sampling grid, rounded halves to even, zero outside).
// This file is compiled with -ffp-contract=off so that every float step rounds
// where torch's does.
#include <cmath>
#include <numbers>

#include "seedloader/error.h"
#include "transforms/augment_ops.h"

namespace seedloader {
namespace {

constexpr double kDegToRad = std::numbers::pi / 180.0;  // Python's math.radians
constexpr double kRadToDeg = 180.0 / std::numbers::pi;  // Python's math.degrees

// torchvision's _get_inverse_affine_matrix with scale 1: the output-to-input
// mapping, about `centre` (relative to the image centre), of a rotation by
// `angle` degrees clockwise, a shear of (shear_x, shear_y) degrees and a
// translation by (tx, ty) pixels.
std::array<double, 6> inverse_affine(double cx, double cy, double angle, double tx,
                                     double ty, double shear_x, double shear_y) {
  const double rot = angle * kDegToRad;
  const double sx = shear_x * kDegToRad;
  const double sy = shear_y * kDegToRad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d, -b, 0.0, -c, a, 0.0};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

}  // namespace

cv::Mat warp_nearest(const cv::Mat& image, const std::array<double, 6>& inverse) {
  const int w = image.cols, h = image.rows;
  const int channels = image.channels();
  // The grid torchvision builds: base coordinates (pixel centres relative to the
  // image centre, exact in float32) times theta^T / (w/2, h/2), in float32.
  const float half_w = static_cast<float>(0.5 * w), half_h = static_cast<float>(0.5 * h);
  float t[6];
  for (int i = 0; i < 6; ++i) t[i] = static_cast<float>(inverse[i]);
  const float rx[3] = {t[0] / half_w, t[1] / half_w, t[2] / half_w};
  const float ry[3] = {t[3] / half_h, t[4] / half_h, t[5] / half_h};
  // grid_sample(align_corners=False) unnormalises (g + 1) * size / 2 - 0.5.
  const float scale_x = static_cast<float>(w) / 2, scale_y = static_cast<float>(h) / 2;
  cv::Mat out(image.size(), image.type(), cv::Scalar::all(0));
  const std::size_t pixel = static_cast<std::size_t>(channels);
  for (int y = 0; y < h; ++y) {
    const float yb = static_cast<float>(y - h * 0.5 + 0.5);
    std::uint8_t* row = out.ptr<std::uint8_t>(y);
    for (int x = 0; x < w; ++x) {
      const float xb = static_cast<float>(x - w * 0.5 + 0.5);
      const float gx = xb * rx[0] + yb * rx[1] + rx[2];
      const float gy = xb * ry[0] + yb * ry[1] + ry[2];
      const float sx = std::nearbyint((gx + 1.0f) * scale_x - 0.5f);
      const float sy = std::nearbyint((gy + 1.0f) * scale_y - 0.5f);
      // Outside the source (or NaN) stays 0: grid_sample's zero padding.
      if (!(sx >= 0 && sx <= w - 1 && sy >= 0 && sy <= h - 1)) continue;
      const std::uint8_t* src =
          image.ptr<std::uint8_t>(static_cast<int>(sy)) + static_cast<int>(sx) * pixel;
      for (std::size_t c = 0; c < pixel; ++c) row[x * pixel + c] = src[c];
    }
  }
  return out;
}

// The affine members of apply_augment_op: ShearX/Y shear about the top-left
// corner by atan(magnitude), TranslateX/Y move by whole pixels, Rotate turns
// about the centre.
cv::Mat affine_op(const cv::Mat& image, AugmentOp op, double magnitude) {
  const double cx = -0.5 * image.cols, cy = -0.5 * image.rows;  // the top-left corner
  const double shear = std::atan(magnitude) * kRadToDeg;
  const double shift = std::trunc(magnitude);  // Python's int()
  switch (op) {
    case AugmentOp::kShearX:
      return warp_nearest(image, inverse_affine(cx, cy, 0, 0, 0, shear, 0));
    case AugmentOp::kShearY:
      return warp_nearest(image, inverse_affine(cx, cy, 0, 0, 0, 0, shear));
    case AugmentOp::kTranslateX:
      return warp_nearest(image, inverse_affine(0, 0, 0, shift, 0, 0, 0));
    case AugmentOp::kTranslateY:
      return warp_nearest(image, inverse_affine(0, 0, 0, 0, shift, 0, 0));
    case AugmentOp::kRotate:
      // F.rotate's counter-clockwise angle is affine's clockwise one, negated.
      return warp_nearest(image, inverse_affine(0, 0, -magnitude, 0, 0, 0, 0));
    default:
      throw ConfigError("affine_op: " + std::string(augment_op_name(op)) +
                        " is not an affine op");
  }
}

}  // namespace seedloader
