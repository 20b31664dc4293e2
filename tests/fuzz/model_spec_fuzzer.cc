// Fuzzes ddp-train's --model parser: the input is the spec ("mlp:784,128,10",
// "cnn:small:10"), built against a few sample shapes of the project's datasets.
// A model that builds is checked the way Sequential sizes it: each layer's output
// shape from the previous one, and every parameter's element count, in checked
// arithmetic, so a spec whose sizes overflow int64 is a finding (Sequential
// computes them without checks).
#include <cstdint>
#include <string>

#include "seedloader/error.h"
#include "tools/ddp_train/model_spec.h"

namespace {

// product(shape) if it fits in int64 and every entry is positive; else traps.
std::int64_t checked_count(const seedloader::ddp::Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d <= 0 || __builtin_mul_overflow(n, d, &n)) __builtin_trap();
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string spec(reinterpret_cast<const char*>(data), size);
  const ddp::Shape samples[] = {{784}, {1, 28, 28}, {3, 32, 32}, {3, 8, 8}, {10}};
  for (const ddp::Shape& sample : samples) {
    try {
      auto layers = train::build_layers(spec, sample);
      ddp::Shape shape = {4};  // a batch of 4
      shape.insert(shape.end(), sample.begin(), sample.end());
      std::int64_t params = 0;
      for (const auto& layer : layers) {
        for (const ddp::ParamSpec& p : layer->param_specs()) {
          if (__builtin_add_overflow(params, checked_count(p.shape), &params))
            __builtin_trap();
        }
        shape = layer->output_shape(shape);
        checked_count(shape);
      }
    } catch (const Error&) {
    }
  }
  return 0;
}
