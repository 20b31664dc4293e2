// Transform: one augmentation step on an image held as a cv::Mat (HWC, CV_8U, 1 or
// 3 channels, RGB order). A Transform is immutable after construction: apply() is
// const and draws randomness only from the Rng it is given (through
// seedloader/random.h), so one object serves every worker process and thread, and
// the same Rng state always gives the same output. Each draw is recorded in an
// optional TransformLog, for the seed audit and for debugging.
//
// Size caps: a hostile input must not make a transform allocate without bound.
// Every size a Transform is configured with is at most kMaxTransformSide per side
// and kMaxTransformPixels in area (ConfigError at construction). A transform whose
// output or intermediate size depends on its input (Resize to a shorter side, the
// padding of RandomCrop) checks that size against kMaxTransformPixels before it
// allocates and throws DataError when it is larger. The cap is a constant, the
// datasets' default header cap (kDefaultMaxPixels), rather than an option threaded
// through Compose: every image a dataset hands over already passed a header cap,
// so a transform's own cap only has to stop sizes it makes itself from growing.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "seedloader/pcg64_stream.h"

namespace seedloader {

// The largest side, and the largest area, of an image a Transform makes.
inline constexpr int kMaxTransformSide = 65536;
// The datasets' default header cap (kDefaultMaxPixels, static_assert-ed equal in
// loader/datasets/image_decode.cc): transforms sit below datasets.
inline constexpr std::uint64_t kMaxTransformPixels = std::uint64_t{1} << 28;

// One drawn parameter: which transform drew it, what it is, its value.
// The names are string literals owned by the transforms (static storage).
struct DrawnParam {
  std::string_view transform;
  std::string_view name;
  double value;
};

// The parameters drawn for one sample, in draw order. Not thread-safe; one per
// worker, cleared per sample by its owner.
class TransformLog {
 public:
  void record(std::string_view transform, std::string_view name, double value) {
    entries_.push_back({transform, name, value});
  }
  std::span<const DrawnParam> entries() const { return entries_; }
  // The value of the first parameter called `name` drawn by `transform`.
  // Throws ConfigError when there is none.
  double value(std::string_view transform, std::string_view name) const;
  void clear() { entries_.clear(); }
  // "rrc.top=3 rrc.left=5 hflip.flip=1 ..."
  std::string to_string() const;

 private:
  std::vector<DrawnParam> entries_;
};

class Transform {
 public:
  virtual ~Transform() = default;

  // Transforms `image` and returns the result (possibly `image` itself).
  // `log` may be null. Throws DataError when the image cannot be transformed
  // (e.g. smaller than a crop that may not pad, or an output above
  // kMaxTransformPixels).
  virtual cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const = 0;

  // The output size for an input of size `in`, where {0, 0} means unknown.
  // Returns {0, 0} when the output size depends on the input and it is unknown.
  // Throws DataError when the output for `in` would exceed kMaxTransformPixels.
  virtual cv::Size output_size(cv::Size in) const { return in; }

  // For messages and --help: "RandomResizedCrop(224x224, ...)".
  virtual std::string describe() const = 0;

  // Region planning, for transforms that choose a region of the source before it
  // is decoded (RandomResizedCrop), so the decoder can work at reduced scale.
  // plan_region() draws exactly what apply() would draw for a source of that size;
  // apply_region() then finishes on an image decoded at 1/reduction scale, where
  // `region` is the planned region mapped into the decoded image's coordinates:
  // divided by the reduction, so its edges may fall between pixels.
  virtual bool plans_region() const { return false; }
  virtual cv::Rect plan_region(cv::Size source, Rng& rng, TransformLog* log) const;
  // The largest reduction (1, 2, 4 or 8) at which `region` can still be decoded
  // without upscaling the result.
  virtual int max_reduction(cv::Rect region) const;
  virtual cv::Mat apply_region(const cv::Mat& decoded, cv::Rect2d region) const;
};

// An encoded image whose size is known from its header before any pixel is
// decoded. Implemented by the datasets over a file's bytes.
class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // Width and height from the header.
  virtual cv::Size size() const = 0;
  // Decodes at 1/reduction of the full size (reduction 1, 2, 4 or 8; formats that
  // cannot decode at reduced scale decode fully and shrink). The result is
  // ceil(size / reduction) in each dimension. Throws DataError for bad input.
  virtual cv::Mat decode(int reduction) const = 0;
  // Decodes at 1/reduction at least the part of the image that covers `region`
  // (full-size coordinates) and sets *crop to where the region lies in the result
  // (the scale_region() mapping). Formats that can decode a window (JPEG) skip
  // the rest; the default decodes the whole image.
  virtual cv::Mat decode_region(int reduction, cv::Rect region, cv::Rect* crop) const;
};

// Maps a region of the full-size source into an image decoded at 1/reduction of
// it: floor the start, ceil the end, clip to `decoded`.
cv::Rect scale_region(cv::Rect region, int reduction, cv::Size decoded);

// The region's exact place in an image decoded at 1/reduction, given `scaled`,
// where decode_region() put its scale_region() mapping: region / reduction,
// shifted by the same offset, and kept within `scaled`.
cv::Rect2d exact_region(cv::Rect region, int reduction, cv::Rect scaled);

// The pixels a window needs: the smallest whole-pixel rectangle around it,
// within `bounds`.
cv::Rect enclosing_rect(cv::Rect2d window, cv::Size bounds);

}  // namespace seedloader
