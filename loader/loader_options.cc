#include "seedloader/loader_options.h"

#include <string>

#include "seedloader/error.h"

namespace seedloader {

namespace {
constexpr int kMaxWorkers = 1024;
constexpr int kMaxPrefetch = 1024;

[[noreturn]] void fail(const std::string& what) {
  throw ConfigError("LoaderOptions: " + what);
}
}  // namespace

void validate(const LoaderOptions& o, std::uint64_t dataset_size) {
  if (o.batch_size == 0) fail("batch_size must be at least 1");
  if (o.num_workers < 0 || o.num_workers > kMaxWorkers) {
    fail("num_workers must be in [0, " + std::to_string(kMaxWorkers) + "], got " +
         std::to_string(o.num_workers));
  }
  if (o.prefetch < 1 || o.prefetch > kMaxPrefetch) {
    fail("prefetch must be in [1, " + std::to_string(kMaxPrefetch) + "], got " +
         std::to_string(o.prefetch));
  }
  if (o.world_size == 0) fail("world_size must be at least 1");
  if (o.rank >= o.world_size) {
    fail("rank " + std::to_string(o.rank) + " must be below world_size " +
         std::to_string(o.world_size));
  }
  if (o.timeout.count() < 0) fail("timeout must not be negative");
  if (dataset_size == 0) fail("the dataset is empty");
}

}  // namespace seedloader
