#include "remote/s3_config_cache.h"

#include <utility>

namespace seedloader::remote {

S3ConfigCache::S3ConfigCache(AwsEnvironment env, const HttpClient& http, bool anonymous)
    : env_(std::move(env)), http_(http), anonymous_(anonymous) {}

std::shared_ptr<const S3Config> S3ConfigCache::current() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = env_.now();
  if (!config_ || config_->refresh_due(now)) {
    try {
      config_ = std::make_shared<const S3Config>(
          S3Config::from_environment(env_, http_, anonymous_));
    } catch (...) {
      // Credentials still valid stay in use; expired ones are never replaced by
      // unsigned requests: the error goes to the request.
      if (!config_ || config_->expired(now)) throw;
    }
  }
  return config_;
}

}  // namespace seedloader::remote
