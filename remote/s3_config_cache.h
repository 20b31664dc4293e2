// S3ConfigCache: the S3 settings an ObjectReader signs with, read
// (S3Config::from_environment) at the first s3:// request and again once
// S3Config::refresh_due() says so by the environment's clock: five minutes before
// temporary credentials expire, or half their lifetime for shorter ones. A failed
// refresh keeps credentials that are still valid; once they have expired the
// failure is the request's error, never an unsigned request.
// Each process refreshes for itself: a forked child inherits the settings its
// parent held and renews them when they fall due.
// Safe across threads. Its mutex is its own, held while credentials are found
// (seconds, at worst), so requests that need no settings never wait for it.
// Holds `http` by reference: the client must outlive the cache.
#pragma once

#include <memory>
#include <mutex>

#include "remote/aws_environment.h"
#include "remote/http_client.h"
#include "remote/s3_config.h"

namespace seedloader::remote {

class S3ConfigCache {
 public:
  // Requests go unsigned when `anonymous` (see S3Config::from_environment).
  S3ConfigCache(AwsEnvironment env, const HttpClient& http, bool anonymous);
  S3ConfigCache(const S3ConfigCache&) = delete;
  S3ConfigCache& operator=(const S3ConfigCache&) = delete;

  // The settings to sign with now. Throws ConfigError when they cannot be read
  // and none still valid are held.
  std::shared_ptr<const S3Config> current();

 private:
  const AwsEnvironment env_;
  const HttpClient& http_;
  const bool anonymous_;
  std::mutex mutex_;
  std::shared_ptr<const S3Config> config_;  // guarded by mutex_
};

}  // namespace seedloader::remote
