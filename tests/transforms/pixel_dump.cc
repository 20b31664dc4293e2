// pixel_dump: prints, for each transform spec step on its own, a hash of the
// pixels it makes from fixed images and fixed streams, one line per step; then,
// for the fused training chain in each output type, a hash of the samples it
// writes from JPEGs (decoded by libjpeg-turbo, at every DCT scale). The pixel
// test runs it under several OpenCV CPU dispatch levels (OPENCV_CPU_DISABLE),
// with libjpeg-turbo's SIMD off (JSIMD_FORCENONE) and with the resampler's
// vector kernels at each level (SEEDLOADER_SIMD=off|sse41|avx2), and requires
// identical lines. `pixel_dump --simd` prints the resampler's level instead.
#include <cstdint>
#include <cstdio>
#include <opencv2/core.hpp>
#include <random>
#include <string>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "loader/datasets/image_decode.h"
#include "seedloader/half.h"
#include "seedloader/transforms/spec.h"
#include "tests/transforms/test_images.h"
#include "transforms/resample_kernels.h"

namespace {

std::uint64_t hash_pixels(const cv::Mat& m, std::uint64_t h) {
  for (int y = 0; y < m.rows; ++y) {
    const auto* row = m.ptr<std::uint8_t>(y);
    for (std::size_t i = 0; i < m.cols * m.elemSize(); ++i)
      h = (h ^ row[i]) * 0x100000001b3ull;
  }
  return h ^ (static_cast<std::uint64_t>(m.rows) << 32 | m.cols);
}

std::uint64_t hash_bytes(const void* data, std::size_t n, std::uint64_t h) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

template <typename T>
void dump_fused(const char* spec, const std::vector<std::vector<std::uint8_t>>& jpegs) {
  const seedloader::Compose chain = seedloader::parse_transform_spec(spec);
  const cv::Size size = chain.output_size();
  std::vector<T> out(std::size_t(3) * size.area());
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    for (const auto& jpeg : jpegs) {
      const seedloader::EncodedImage source(jpeg, seedloader::kDefaultMaxPixels, 3);
      seedloader::Rng rng = seedloader::testing::test_rng(seed);
      chain.write_fused(source, rng, nullptr, std::span<T>(out));
      h = hash_bytes(out.data(), out.size() * sizeof(T), h);
    }
  }
  std::printf("fused %s %016llx\n", spec, static_cast<unsigned long long>(h));
}

}  // namespace

int dump() {
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
  std::vector<std::vector<std::uint8_t>> jpegs;
  for (const cv::Size s :
       {cv::Size(320, 240), cv::Size(500, 375), cv::Size(1600, 1200)}) {
    cv::Mat image = seedloader::testing::noise_image(s.width, s.height, 4);
    cv::GaussianBlur(image, image, cv::Size(5, 5), 1.5);
    jpegs.emplace_back();
    cv::imencode(".jpg", image, jpegs.back());
  }
  dump_fused<float>("rrc:224,hflip,normalize:imagenet", jpegs);
  dump_fused<seedloader::Float16>("rrc:224,hflip,normalize:imagenet:f16", jpegs);
  dump_fused<seedloader::BFloat16>("rrc:224,hflip,normalize:imagenet:bf16", jpegs);
  dump_fused<std::uint8_t>("rrc:224,hflip,u8", jpegs);
  dump_fused<float>("rrc:101x37,hflip,normalize:imagenet", jpegs);
  return 0;
}

int main(int argc, char** argv) {
  try {
    if (argc == 2 && std::string(argv[1]) == "--simd") {
      namespace resample = seedloader::resample;
      std::printf("%s\n", resample::simd_level_name(resample::simd_level()));
      return 0;
    }
    return dump();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pixel_dump: %s\n", e.what());
    return 1;
  }
}
