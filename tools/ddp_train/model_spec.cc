#include "tools/ddp_train/model_spec.h"

#include <charconv>

#include "seedloader/ddp/layers.h"
#include "seedloader/error.h"

namespace seedloader::train {
namespace {

// Layer widths fit the int32 the BLAS and CUDA kernels index with, so a batch's
// activations (batch x width) stay far inside int64 as well.
constexpr std::int64_t kMaxWidth = (std::int64_t{1} << 31) - 1;

std::int64_t parse_dim(const std::string& spec, std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0)
    throw ConfigError("--model " + spec + ": '" + std::string(s) +
                      "' is not a positive size");
  if (v > kMaxWidth) {
    throw ConfigError("--model " + spec + ": '" + std::string(s) +
                      "' is above the largest layer width, 2^31 - 1");
  }
  return v;
}

std::vector<std::unique_ptr<ddp::Layer>> mlp(const std::string& spec,
                                             std::string_view arg,
                                             const ddp::Shape& sample) {
  std::vector<std::int64_t> dims;
  while (!arg.empty()) {
    std::size_t comma = arg.find(',');
    dims.push_back(parse_dim(spec, arg.substr(0, comma)));
    arg = comma == std::string_view::npos ? std::string_view() : arg.substr(comma + 1);
  }
  if (dims.size() < 2) throw ConfigError("--model " + spec + ": mlp needs IN,...,OUT");
  if (ddp::element_count(sample) != dims[0])
    throw ConfigError("--model " + spec + ": the data's samples are " +
                      ddp::shape_string(sample) + ", not " + std::to_string(dims[0]) +
                      " inputs");
  std::vector<std::unique_ptr<ddp::Layer>> layers;
  if (sample.size() != 1) layers.push_back(std::make_unique<ddp::Flatten>());
  for (std::size_t i = 0; i + 1 < dims.size(); ++i) {
    layers.push_back(std::make_unique<ddp::Linear>(dims[i], dims[i + 1]));
    if (i + 2 < dims.size()) layers.push_back(std::make_unique<ddp::ReLU>());
  }
  return layers;
}

std::vector<std::unique_ptr<ddp::Layer>> cnn(const std::string& spec,
                                             std::string_view arg,
                                             const ddp::Shape& sample) {
  std::int64_t classes = 10;
  if (arg.starts_with("small:")) {
    classes = parse_dim(spec, arg.substr(6));
  } else if (arg != "small") {
    throw ConfigError("--model " + spec + ": the cnn is cnn:small[:CLASSES]");
  }
  if (sample.size() != 3 || sample[1] < 4 || sample[2] < 4)
    throw ConfigError("--model " + spec +
                      ": needs [C, H, W] images of at least 4x4, got " +
                      ddp::shape_string(sample));
  const std::int64_t c = sample[0], h = sample[1] / 4, w = sample[2] / 4;
  std::vector<std::unique_ptr<ddp::Layer>> layers;
  layers.push_back(std::make_unique<ddp::Conv2d>(c, 16, 3, 1, 1));
  layers.push_back(std::make_unique<ddp::ReLU>());
  layers.push_back(std::make_unique<ddp::MaxPool2d>(2));
  layers.push_back(std::make_unique<ddp::Conv2d>(16, 32, 3, 1, 1));
  layers.push_back(std::make_unique<ddp::ReLU>());
  layers.push_back(std::make_unique<ddp::MaxPool2d>(2));
  layers.push_back(std::make_unique<ddp::Flatten>());
  layers.push_back(std::make_unique<ddp::Linear>(32 * h * w, classes));
  return layers;
}

}  // namespace

std::vector<std::unique_ptr<ddp::Layer>> build_layers(const std::string& spec,
                                                      const ddp::Shape& sample) {
  std::size_t colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  std::string_view arg = colon == std::string::npos
                             ? std::string_view()
                             : std::string_view(spec).substr(colon + 1);
  std::vector<std::unique_ptr<ddp::Layer>> layers;
  if (kind == "mlp") {
    layers = mlp(spec, arg, sample);
  } else if (kind == "cnn") {
    layers = cnn(spec, arg, sample);
  } else {
    throw ConfigError("--model " + spec +
                      ": unknown model (mlp:IN,...,OUT or cnn:small)");
  }
  // Sequential sizes its flat buffers with unchecked int64 products, so a count
  // that overflows must stop here.
  std::int64_t params = 0;
  for (const auto& layer : layers) {
    for (const ddp::ParamSpec& p : layer->param_specs()) {
      std::int64_t n = 1;
      bool overflow = false;
      for (std::int64_t d : p.shape) overflow |= __builtin_mul_overflow(n, d, &n);
      if (overflow || __builtin_add_overflow(params, n, &params))
        throw ConfigError("--model " + spec + ": more than 2^63 parameters");
    }
  }
  return layers;
}

}  // namespace seedloader::train
