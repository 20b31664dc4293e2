#include "tools/ddp_train/model_spec.h"

#include <charconv>

#include "ddp/layers.h"
#include "rng/error.h"

namespace seedloader::train {
namespace {

std::int64_t parse_dim(const std::string& spec, std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0)
    throw ConfigError("--model " + spec + ": '" + std::string(s) +
                      "' is not a positive size");
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
  if (kind == "mlp") return mlp(spec, arg, sample);
  if (kind == "cnn") return cnn(spec, arg, sample);
  throw ConfigError("--model " + spec + ": unknown model (mlp:IN,...,OUT or cnn:small)");
}

}  // namespace seedloader::train
