// Fuzzes parse_transform_spec: the input is a spec string. A chain that parses
// is applied to a small image and written out as a tensor, and its result must
// have the size output_size() promised. Specs with a number above kMaxNumber are
// only parsed: sizes, paddings and kernels are not capped by design (they come
// from the user), and a 10^9-pixel resize would only measure the machine.
#include <cctype>
#include <cstdint>
#include <string_view>
#include <vector>

#include "seedloader/error.h"
#include "seedloader/seed_sequence.h"
#include "seedloader/transforms/spec.h"

namespace {

constexpr std::uint64_t kMaxNumber = 256;

bool has_large_number(std::string_view s) {
  std::uint64_t run = 0;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      run = std::min<std::uint64_t>(run * 10 + (c - '0'), kMaxNumber + 1);
      if (run > kMaxNumber) return true;
    } else {
      run = 0;
    }
  }
  return false;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  try {
    const Compose chain = parse_transform_spec(spec);
    (void)chain.describe();
    if (has_large_number(spec)) return 0;
    for (int channels : {1, 3}) {
      cv::Mat image(12, 16, CV_8UC(channels));
      for (int r = 0; r < image.rows; ++r) {
        for (int c = 0; c < image.cols * channels; ++c)
          image.ptr(r)[c] = (r * 37 + c * 11) & 0xff;
      }
      const cv::Size want = chain.output_size(image.size());
      Rng rng{SeedSequence(size)};
      TransformLog log;
      const cv::Mat out = chain.apply(image, rng, &log);
      (void)log.to_string();
      check(out.size() == want && out.channels() == channels && out.depth() == CV_8U);
      const std::size_t n = static_cast<std::size_t>(out.total()) * channels;
      switch (chain.output().dtype()) {
        case DType::kU8: {
          std::vector<std::uint8_t> tensor(n);
          chain.output().write(out, tensor);
          break;
        }
        case DType::kF16: {
          std::vector<Float16> tensor(n);
          chain.output().write(out, tensor);
          break;
        }
        case DType::kBF16: {
          std::vector<BFloat16> tensor(n);
          chain.output().write(out, tensor);
          break;
        }
        default: {
          std::vector<float> tensor(n);
          chain.output().write(out, tensor);
        }
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
