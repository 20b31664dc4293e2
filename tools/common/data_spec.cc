#include "tools/common/data_spec.h"

#include <charconv>

#include "seedloader/datasets/cifar10.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"

namespace seedloader::tools {

std::unique_ptr<Dataset> open_dataset(const std::string& spec,
                                      const std::string& transform) {
  std::size_t colon = spec.find(':');
  if (colon == std::string::npos || colon + 1 == spec.size()) {
    throw ConfigError("--data " + spec + ": expected KIND:ARG (" + data_spec_help() +
                      ")");
  }
  std::string kind = spec.substr(0, colon), arg = spec.substr(colon + 1);
  Compose chain = transform.empty() ? Compose() : parse_transform_spec(transform);
  if (kind == "synthetic") {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), n);
    if (ec != std::errc() || end != arg.data() + arg.size() || n == 0) {
      throw ConfigError("--data " + spec + ": synthetic needs a positive sample count");
    }
    return std::make_unique<Synthetic>(n, 32, 32, 3, std::move(chain));
  }
  if (kind == "imagefolder") return std::make_unique<ImageFolder>(arg, std::move(chain));
  if (kind == "cifar10")
    return std::make_unique<Cifar10>(arg, Split::kTrain, std::move(chain));
  if (kind == "mnist")
    return std::make_unique<Mnist>(arg, Split::kTrain, std::move(chain));
  if (kind == "tar") return std::make_unique<TarShards>(arg, std::move(chain));
  throw ConfigError("--data " + spec + ": unknown kind '" + kind + "' (" +
                    data_spec_help() + ")");
}

std::string data_spec_help() {
  return "synthetic:N (32x32 RGB images), imagefolder:DIR, cifar10:DIR, mnist:DIR or "
         "tar:PATTERN (training split)";
}

}  // namespace seedloader::tools
