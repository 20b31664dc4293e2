// pixel_dump: prints, for each transform spec step on its own, a hash of the
// pixels it makes from fixed images and fixed streams, one line per step. The
// pixel test runs it under several OpenCV CPU dispatch levels
// (OPENCV_CPU_DISABLE) and requires identical lines.
#include <cstdint>
#include <cstdio>
#include <opencv2/core.hpp>
#include <random>
#include <string>

#include "seedloader/transforms/spec.h"
#include "tests/transforms/test_images.h"

namespace {

std::uint64_t hash_pixels(const cv::Mat& m, std::uint64_t h) {
  for (int y = 0; y < m.rows; ++y) {
    const auto* row = m.ptr<std::uint8_t>(y);
    for (std::size_t i = 0; i < m.cols * m.elemSize(); ++i)
      h = (h ^ row[i]) * 0x100000001b3ull;
  }
  return h ^ (static_cast<std::uint64_t>(m.rows) << 32 | m.cols);
}

}  // namespace

int main() {
  using seedloader::parse_transform_spec;
  const char* steps[] = {"erase:1",
                         "rrc:64",
                         "crop:48:8",
                         "centercrop:40",
                         "resize:37",
                         "resize:200",
                         "hflip",
                         "vflip",
                         "jitter:0.4:0.4:0.4:0.1",
                         "jitter:0.4:0.4:0.4:0",
                         "jitter:0:0:0:0.5",
                         "rotate:30",
                         "blur:5:0.1:2",
                         "trivialaugment",
                         "trivialaugment:5",
                         "randaugment",
                         "randaugment:4:30:31"};
  const cv::Mat images[] = {seedloader::testing::gradient_image(97, 83),
                            seedloader::testing::noise_image(96, 80, 1),
                            seedloader::testing::noise_image(131, 67, 2)};
  for (const char* step : steps) {
    const seedloader::Compose chain = parse_transform_spec(step);
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      for (const cv::Mat& image : images) {
        seedloader::Rng rng = seedloader::testing::test_rng(seed);
        h = hash_pixels(chain.apply(image.clone(), rng, nullptr), h);
      }
    }
    std::printf("%s %016llx\n", step, static_cast<unsigned long long>(h));
  }
  return 0;
}
