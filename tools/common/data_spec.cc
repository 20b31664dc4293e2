#include "tools/common/data_spec.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/json_depth.h"
#include "seedloader/datasets/cifar10.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"
#include "seedloader/transforms/spec.h"
#include "tools/common/input_file.h"

namespace seedloader::tools {

namespace {

using Json = nlohmann::ordered_json;  // the sources in the file's order

// The weights of one schedule point, in the order of `names`.
std::vector<double> point_weights(const Json& given,
                                  const std::vector<std::string>& names,
                                  const std::string& where) {
  if (!given.is_object())
    throw ConfigError(where + ": weights must be an object of name: weight");
  std::vector<double> out;
  for (const std::string& name : names) {
    if (!given.contains(name))
      throw ConfigError(where + ": no weight for source '" + name +
                        "' (give every source one; 0 pauses it)");
    if (!given[name].is_number())
      throw ConfigError(where + ": the weight of '" + name + "' is not a number");
    out.push_back(given[name].get<double>());
  }
  for (const auto& [name, _] : given.items())
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw ConfigError(where + ": '" + name + "' is not a source");
  return out;
}

std::unique_ptr<Dataset> open_mixture(const std::string& spec, const std::string& arg,
                                      const std::string& transform) {
  const bool inline_json = !arg.empty() && arg[0] == '{';
  const std::string where = "--data " + (inline_json ? std::string("mix:{...}") : spec);
  const std::string text =
      inline_json ? arg : read_input_file(where, arg, kMaxJsonFileBytes);
  MixSpec mix = parse_mix_spec(where, text);
  std::vector<MixtureSource> sources;
  for (std::size_t s = 0; s < mix.names.size(); ++s)
    sources.push_back({mix.names[s], open_dataset(mix.sources[s], transform)});
  try {
    return std::make_unique<MixtureDataset>(
        std::move(sources),
        MixtureSchedule(mix.names, std::move(mix.points), mix.interpolate),
        mix.samples_per_epoch);
  } catch (const ConfigError& e) {
    throw ConfigError(where + ": " + e.what());
  }
}

}  // namespace

MixSpec parse_mix_spec(const std::string& where, std::string_view text) {
  Json j;
  try {
    j = parse_json<Json>(text);
  } catch (const JsonTooDeep& e) {
    throw ConfigError(where + ": " + e.what());
  } catch (const Json::exception& e) {
    throw ConfigError(where + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("sources") || !j["sources"].is_object() ||
      j["sources"].empty() || !j.contains("weights"))
    throw ConfigError(where + ": expected {\"sources\": {name: data spec, ...}, " +
                      "\"weights\": {...} or [[step, {...}], ...]}");
  static const std::vector<std::string> keys = {"sources", "weights", "samples_per_epoch",
                                                "interpolate"};
  for (const auto& [key, _] : j.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (const std::string& k : keys) known += (known.empty() ? "" : ", ") + k;
      const std::string shown = key.size() > 80 ? key.substr(0, 80) + "..." : key;
      throw ConfigError(where + ": unknown key '" + shown + "' (a mix: spec has " +
                        known + ")");
    }
  }
  MixSpec mix;
  for (const auto& [name, source] : j["sources"].items()) {
    if (!source.is_string())
      throw ConfigError(where + ": source '" + name + "' must be a data spec string");
    if (source.get<std::string>().starts_with("mix:"))
      throw ConfigError(where + ": source '" + name +
                        "' is a mixture; a mixture's sources are plain data sets");
    mix.names.push_back(name);
    mix.sources.push_back(source.get<std::string>());
  }
  const Json& w = j["weights"];
  if (w.is_object()) {
    mix.points.push_back({0, point_weights(w, mix.names, where)});
  } else if (w.is_array()) {
    for (const Json& p : w) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned())
        throw ConfigError(where + ": a schedule point must be [step, {name: weight}]");
      const auto step = p[0].get<std::uint64_t>();
      mix.points.push_back(
          {step, point_weights(p[1], mix.names,
                               where + ": the point at step " + std::to_string(step))});
    }
  } else {
    throw ConfigError(where + ": weights must be an object or a list of [step, {...}]");
  }
  if (j.contains("interpolate")) {
    if (!j["interpolate"].is_boolean())
      throw ConfigError(where + ": interpolate must be true or false");
    mix.interpolate = j["interpolate"].get<bool>();
  }
  if (j.contains("samples_per_epoch")) {
    if (!j["samples_per_epoch"].is_number_unsigned() ||
        j["samples_per_epoch"].get<std::uint64_t>() == 0)
      throw ConfigError(where + ": samples_per_epoch must be a positive integer below " +
                        "2^64");
    mix.samples_per_epoch = j["samples_per_epoch"].get<std::uint64_t>();
  }
  return mix;
}

std::unique_ptr<Dataset> open_dataset_for_order(const std::string& spec) {
  return open_dataset(spec, kOrderTransform);
}

std::unique_ptr<Dataset> open_dataset(const std::string& spec,
                                      const std::string& transform) {
  std::size_t colon = spec.find(':');
  if (colon == std::string::npos || colon + 1 == spec.size()) {
    throw ConfigError("--data " + spec + ": expected KIND:ARG (" + data_spec_help() +
                      ")");
  }
  std::string kind = spec.substr(0, colon), arg = spec.substr(colon + 1);
  if (kind == "mix") return open_mixture(spec, arg, transform);
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
         "$SEEDLOADER_PREFETCH_SHARDS (4) shards ahead; mix:FILE (or mix:{...} inline) "
         "is a mixture of those by weight: {\"sources\": {NAME: SPEC, ...}, "
         "\"weights\": {NAME: W, ...} or [[STEP, {NAME: W, ...}], ...], "
         "\"samples_per_epoch\": N, \"interpolate\": false} and no other key (an "
         "epoch of ceil(N / G) global batches of G holds at most 2^64 - 1 samples); "
         "FILE is a regular file of at most 64 MiB, and the JSON nests at most 64 "
         "deep (docs/datasets.md, Mixtures)";
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
