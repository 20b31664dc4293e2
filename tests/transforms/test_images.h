// Small deterministic images and helpers shared by the transform tests.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <random>

#include "seedloader/pcg64_stream.h"
#include "seedloader/seed_sequence.h"

namespace seedloader::testing {

// Every pixel distinct enough to locate a window: R = x, G = y, B = (x * 7 + y * 3).
inline cv::Mat gradient_image(int width, int height) {
  cv::Mat image(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x), static_cast<uchar>(y),
                                            static_cast<uchar>(x * 7 + y * 3));
    }
  }
  return image;
}

// Uniform noise from mt19937(seed): photographs are not gradients, and noise
// exercises every rounding path.
inline cv::Mat noise_image(int width, int height, std::uint32_t seed) {
  cv::Mat image(height, width, CV_8UC3);
  std::mt19937 gen(seed);
  for (int y = 0; y < height; ++y) {
    auto* row = image.ptr<std::uint8_t>(y);
    for (int i = 0; i < width * 3; ++i) row[i] = static_cast<std::uint8_t>(gen());
  }
  return image;
}

// A smooth picture with edges: what photographs mostly are.
inline cv::Mat scene_image(int width, int height) {
  cv::Mat image = gradient_image(width, height);
  cv::circle(image, {width / 3, height / 2}, height / 4, cv::Scalar(250, 40, 90), -1);
  cv::rectangle(image, {width / 2, 2}, {width - 3, height / 3}, cv::Scalar(10, 200, 30),
                -1);
  return image;
}

inline Rng test_rng(std::uint64_t seed) { return Rng(SeedSequence(seed)); }

inline bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() &&
         cv::norm(a, b, cv::NORM_INF) == 0;
}

}  // namespace seedloader::testing
