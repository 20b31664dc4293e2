// Antialiased bilinear resampling, computed as Pillow's Image.resize(size,
// BILINEAR) computes it (what torchvision's Resize and RandomResizedCrop do to
// PIL images), bit for bit: a triangle filter whose support widens with the
// shrink factor, one horizontal pass then one vertical pass, each in 22-bit
// fixed point and rounded back to uint8. Integer arithmetic throughout, so the
// bytes do not depend on how the compiler or the CPU vectorises the loops.
//
// resize_planes() fuses the rest of the usual chain into the vertical pass: an
// optional horizontal mirror (taken in the horizontal pass, by writing its
// columns in reverse) and the ToTensor write (a per-channel table from the uint8
// value to the output element, stored straight into CHW planes), so no HWC image
// of the output size is ever made.
//
// A Resampler holds buffers it reuses from call to call: once they have grown to
// the largest image seen, a call allocates nothing. One per thread; not
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include <opencv2/core.hpp>

#include "seedloader/transforms/tensor.h"

namespace seedloader {

// A window of the source in pixel coordinates, possibly fractional (an image
// decoded at reduced scale maps its crop onto fractional edges). Pillow's box.
struct ResampleBox {
  double x0, y0, x1, y1;
};

class Resampler {
 public:
  // Resizes `box` of `src` (CV_8UC1 or CV_8UC3) to `size` into `dst` (HWC).
  // Pixels outside the box weigh in near its edges, clipped to `src`, as in
  // Pillow. REQUIRES: the box lies within src and is not empty; size positive.
  void resize(const cv::Mat& src, ResampleBox box, cv::Size size, cv::Mat& dst);

  // As resize(), mirrored left to right when `mirror`, and written through
  // `output` as its write() writes an image: CHW planes of T, output.dtype()'s
  // element type (out.size() == channels * size.area()). Throws DataError as
  // ToTensor::write() does.
  template <typename T>
  void resize_planes(const cv::Mat& src, ResampleBox box, cv::Size size, bool mirror,
                     const ToTensor& output, std::span<T> out);

 private:
  // One axis' filter: for output i, taps start at first[i], count[i] of them,
  // weights at weights[i * taps ...].
  struct Axis {
    std::vector<int> first;
    std::vector<int> count;
    std::vector<std::int32_t> weights;
    std::vector<double> scratch;  // one output's weights before rounding
    int taps = 0;
  };
  static void plan(int in_size, double in0, double in1, int out_size, Axis& axis);
  // Plans both axes and runs the horizontal pass over the source rows the
  // vertical pass needs, into rows_.
  void horizontal(const cv::Mat& src, ResampleBox box, cv::Size size, bool mirror);
  // Output row y of the vertical pass (C planes of the output width, in line_).
  const std::uint8_t* vertical_row(int y, int row_elems);

  Axis h_;
  Axis v_;
  // The horizontal pass' rows, each as C planes of the output width.
  std::vector<std::uint8_t> rows_;
  std::vector<std::uint8_t> line_;  // one output row, as C planes
  std::vector<std::int16_t> wide_;  // h_.weights, split for pmaddwd
};

// This thread's Resampler (each worker process and thread has its own).
Resampler& thread_resampler();

}  // namespace seedloader
