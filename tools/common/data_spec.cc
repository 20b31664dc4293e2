#include "tools/common/data_spec.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

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
  if (kind == "tar") {
    TarShardsOptions options;
    if (const char* limit = std::getenv("SEEDLOADER_CACHE_LIMIT"); limit && *limit) {
      const std::optional<std::uint64_t> bytes = parse_byte_size(limit);
      if (!bytes) {
        throw ConfigError("SEEDLOADER_CACHE_LIMIT '" + std::string(limit) +
                          "': expected a size in bytes, such as 200G or 500M");
      }
      options.cache_limit = *bytes;
    }
    if (const char* verify = std::getenv("SEEDLOADER_CACHE_VERIFY"); verify && *verify) {
      const std::optional<CacheVerify> how = parse_cache_verify(verify);
      if (!how) {
        throw ConfigError("SEEDLOADER_CACHE_VERIFY '" + std::string(verify) +
                          "': expected stat, hash or none");
      }
      options.cache_verify = *how;
    }
    if (const char* ahead = std::getenv("SEEDLOADER_PREFETCH_SHARDS"); ahead && *ahead) {
      int shards = -1;
      const char* end = ahead + std::strlen(ahead);
      auto [p, ec] = std::from_chars(ahead, end, shards);
      if (ec != std::errc() || p != end || shards < 0) {
        throw ConfigError("SEEDLOADER_PREFETCH_SHARDS '" + std::string(ahead) +
                          "': expected a shard count >= 0");
      }
      options.prefetch_shards = shards;
    }
    return std::make_unique<TarShards>(arg, std::move(chain), options);
  }
  throw ConfigError("--data " + spec + ": unknown kind '" + kind + "' (" +
                    data_spec_help() + ")");
}

std::string data_spec_help() {
  return "synthetic:N (32x32 RGB images), imagefolder:DIR, cifar10:DIR, mnist:DIR or "
         "tar:PATTERN (training split); tar: also takes a packed folder or its URL "
         "(s3://, https://, http://), cached in $SEEDLOADER_CACHE_DIR and bounded by "
         "$SEEDLOADER_CACHE_LIMIT (e.g. 200G), cached shards checked as "
         "$SEEDLOADER_CACHE_VERIFY says (stat, hash or none), each worker downloading "
         "$SEEDLOADER_PREFETCH_SHARDS (4) shards ahead";
}

std::optional<std::uint64_t> parse_byte_size(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || p == text.data()) return std::nullopt;
  if (p == end) return value;
  if (p + 1 != end) return std::nullopt;
  int shift = 0;
  switch (*p) {
    case 'K':
      shift = 10;
      break;
    case 'M':
      shift = 20;
      break;
    case 'G':
      shift = 30;
      break;
    case 'T':
      shift = 40;
      break;
    default:
      return std::nullopt;
  }
  if (value > (~std::uint64_t{0} >> shift)) return std::nullopt;
  return value << shift;
}

}  // namespace seedloader::tools
