// transforms_bench: the costs that decide an augmentation pipeline's speed.
// Each transform on a 256x256 image (224x224 out where it resizes or crops);
// decoding a 1600x1200 JPEG at full size, at 1/2, 1/4, 1/8 and only a 224x224
// window, and with restart markers added; RandomResizedCrop from that JPEG, decoding at
// the reduced scale the crop allows versus always at full size; the fused
// ToTensor+Normalize pass; the ImageNet training chain on a decoded image. Items are
// images.
#include <benchmark/benchmark.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "loader/datasets/image_decode.h"
#include "loader/datasets/jpeg_region.h"
#include "loader/datasets/jpeg_restart.h"
#include "seedloader/seed_sequence.h"
#include "seedloader/transforms/spec.h"
#include "transforms/crop.h"

namespace seedloader {
namespace {

std::vector<std::uint8_t> test_jpeg() {
  cv::Mat image(1200, 1600, CV_8UC3);
  cv::RNG pixels(7);  // OpenCV's generator only paints the test picture
  pixels.fill(image, cv::RNG::UNIFORM, 0, 255);
  cv::GaussianBlur(image, image, cv::Size(9, 9), 3);
  std::vector<std::uint8_t> bytes;
  cv::imencode(".jpg", image, bytes);
  return bytes;
}

// A source that always decodes at full size, for the comparison.
class FullScaleOnly final : public ImageSource {
 public:
  explicit FullScaleOnly(const EncodedImage& inner) : inner_(inner) {}
  cv::Size size() const override { return inner_.size(); }
  cv::Mat decode(int reduction) const override {
    cv::Mat full = inner_.decode(1);
    if (reduction == 1) return full;
    cv::Mat small;
    cv::resize(full, small,
               cv::Size((full.cols + reduction - 1) / reduction,
                        (full.rows + reduction - 1) / reduction),
               0, 0, cv::INTER_AREA);
    return small;
  }

 private:
  const EncodedImage& inner_;
};

void BM_RrcFromJpeg(benchmark::State& state) {
  const bool reduced = state.range(0) != 0;
  const auto bytes = test_jpeg();
  Compose chain;
  chain.add(RandomResizedCrop(cv::Size(224, 224)));
  Rng rng{SeedSequence(1)};
  for (auto _ : state) {
    const EncodedImage source(bytes, kDefaultMaxPixels, 3);
    cv::Mat out = reduced ? chain.apply(source, rng, nullptr)
                          : chain.apply(FullScaleOnly(source), rng, nullptr);
    benchmark::DoNotOptimize(out.data);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(reduced ? "reduced-scale decode" : "full decode");
}
BENCHMARK(BM_RrcFromJpeg)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_ToTensorNormalizeFused(benchmark::State& state) {
  cv::Mat image(224, 224, CV_8UC3, cv::Scalar(10, 120, 240));
  const ToTensor output(Normalize::imagenet());
  std::vector<float> row(3 * 224 * 224);
  for (auto _ : state) {
    output.write(image, std::span<float>(row));
    benchmark::DoNotOptimize(row.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(row.size() * 4));
}
BENCHMARK(BM_ToTensorNormalizeFused);

void BM_ImagenetTrainChain(benchmark::State& state) {
  cv::Mat image(375, 500, CV_8UC3);
  cv::RNG pixels(3);
  pixels.fill(image, cv::RNG::UNIFORM, 0, 255);
  const Compose chain =
      parse_transform_spec("rrc:224,hflip,jitter:0.4:0.4:0.4:0.1,normalize:imagenet");
  std::vector<float> row(3 * 224 * 224);
  Rng rng{SeedSequence(2)};
  for (auto _ : state) {
    chain.output().write(chain.apply(image, rng, nullptr), std::span<float>(row));
    benchmark::DoNotOptimize(row.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ImagenetTrainChain)->Unit(benchmark::kMillisecond);

void BM_Transform(benchmark::State& state, const char* spec) {
  cv::Mat image(256, 256, CV_8UC3);
  cv::RNG pixels(5);
  pixels.fill(image, cv::RNG::UNIFORM, 0, 255);
  const Compose chain = parse_transform_spec(spec);
  Rng rng{SeedSequence(4)};
  for (auto _ : state) {
    cv::Mat out = chain.apply(image, rng, nullptr);
    benchmark::DoNotOptimize(out.data);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_Transform, hflip, "hflip:1");
BENCHMARK_CAPTURE(BM_Transform, vflip, "vflip:1");
BENCHMARK_CAPTURE(BM_Transform, random_resized_crop, "rrc:224");
BENCHMARK_CAPTURE(BM_Transform, random_crop_padded, "crop:224:4");
BENCHMARK_CAPTURE(BM_Transform, center_crop, "centercrop:224");
BENCHMARK_CAPTURE(BM_Transform, resize, "resize:224x224");
BENCHMARK_CAPTURE(BM_Transform, color_jitter, "jitter:0.4:0.4:0.4:0.1");
BENCHMARK_CAPTURE(BM_Transform, rotation, "rotate:30");
BENCHMARK_CAPTURE(BM_Transform, gaussian_blur, "blur:5:0.1:2");

// Arg: the reduction (1, 2, 4, 8), or 0 for a 224x224 window at full scale.
// BM_JpegDecodeRestarted: the same JPEG rewritten by seedloader-pack
// --jpeg-restart (its coefficients copied, restart markers added, Huffman
// tables optimised), decoded whole, so the two show what the markers cost.
void jpeg_decode(benchmark::State& state, const std::vector<std::uint8_t>& bytes) {
  const ImageHeader header = probe_image(bytes, kDefaultMaxPixels);
  const int reduction = static_cast<int>(state.range(0));
  for (auto _ : state) {
    if (reduction == 0) {
      JpegRegion window = decode_jpeg_region(bytes, 1, cv::Rect(700, 500, 224, 224), 3);
      benchmark::DoNotOptimize(window.pixels.data);
    } else {
      cv::Mat out = decode_image(bytes, header, reduction, 3);
      benchmark::DoNotOptimize(out.data);
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
  state.SetLabel(reduction == 0 ? "224x224 window" : "1/" + std::to_string(reduction));
}
void BM_JpegDecode(benchmark::State& state) { jpeg_decode(state, test_jpeg()); }
BENCHMARK(BM_JpegDecode)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);

void BM_JpegDecodeRestarted(benchmark::State& state) {
  std::string why_not;
  const auto restarted = add_restarts(test_jpeg(), &why_not);
  if (!restarted) {
    state.SkipWithError(("no restart markers: " + why_not).c_str());
    return;
  }
  jpeg_decode(state, restarted->jpeg);
}
BENCHMARK(BM_JpegDecodeRestarted)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace seedloader

BENCHMARK_MAIN();
