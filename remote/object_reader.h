// ObjectReader: whole objects over HTTP(S) and S3, through the module's HttpClient
// (http_client.h), which it owns: connections are kept alive in a small pool of
// curl handles (one per thread reading at once), and a process forked after a
// handle was opened never uses the parent's connections. S3's settings and
// credentials (S3ConfigCache) are found through the same client.
// Faults: a timeout, a refused or reset connection, a short body, HTTP 5xx, 429 or
// 408 are retried, with exponential backoff and jitter, up to
// FetchOptions::max_attempts attempts without progress; a download that was cut
// off continues with a Range request from its last byte (a transfer cut for being
// slower than min_rate_bytes_s counts as an attempt even when it moved bytes, so a
// server trickling bytes is given up on). HTTP 4xx otherwise fails at once. Every
// failure is a DataError naming the URL (never credentials), the HTTP status or
// curl's error, and the attempt count.
// Redirects (up to 5) are followed by this class, not by curl: to the same origin
// (scheme, host and port) with the request's credentials, to another origin with
// none — no Authorization, no SigV4 signature, no x-amz-security-token, no
// password from the URL — so nothing secret leaves the host it was meant for.
// Safe across threads; each call uses its own handle.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "remote/aws_environment.h"
#include "remote/object_url.h"

namespace seedloader::remote {

struct FetchOptions {
  int max_attempts = 6;           // attempts that made no progress, per object
  double connect_timeout_s = 10;  // to open a connection
  // A transfer moving fewer than min_rate_bytes_s bytes a second, averaged over
  // stall_timeout_s seconds, is cut off (1: only one that moves no byte at all).
  double stall_timeout_s = 30;
  double min_rate_bytes_s = 1024;
  // The most time one object may take, every attempt and backoff included
  // (0: no bound beyond the attempts'); past it the read fails naming it.
  double deadline_s = 0;
  double first_backoff_s = 0.2;  // the first retry's delay; doubles up to max_backoff_s
  double max_backoff_s = 10;
  // S3 requests go unsigned, whatever credentials could be found (a public
  // bucket); AWS_NO_SIGN_REQUEST=true does the same.
  bool anonymous = false;
  // Where S3's settings and credentials are read from, and the clock their expiry
  // is judged by: the process's variables and the system clock unless given.
  AwsEnvironment aws;
};

// A bound on one read's whole time, every attempt and backoff included, beside
// FetchOptions::deadline_s: whichever ends first ends the read, and the error
// names the setting that did.
struct ReadDeadline {
  double seconds = 0;   // 0: none
  std::string setting;  // its name in the error, e.g. "index_deadline_s"
};

class ObjectReader {
 public:
  // S3's endpoint and credentials are read from options.aws (S3Config) at the
  // first s3:// request, and again before temporary credentials expire
  // (S3ConfigCache); either throws ConfigError for bad AWS settings or no
  // credentials. Throws ConfigError for bad options.
  explicit ObjectReader(FetchOptions options = {});
  ~ObjectReader();
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  // The whole object into `out` (resized); false, not an error, when the server
  // answers 404 (no such object). An object longer than max_bytes is a DataError
  // naming the URL and the limit, raised once max_bytes have arrived; one not
  // read by `deadline` (or FetchOptions::deadline_s) is a DataError naming it.
  // Throws ConfigError for a negative deadline.
  bool read_if_present(const ObjectUrl& url, std::vector<std::uint8_t>& out,
                       std::uint64_t max_bytes, const ReadDeadline& deadline = {}) const;
  // Appends the object's bytes [have, total) to the file open as `fd`, which holds
  // its first `have` bytes. A server that ignores the Range request restarts the
  // file from byte 0. Throws DataError when the object is not `total` bytes long.
  void download(const ObjectUrl& url, int fd, std::uint64_t have,
                std::uint64_t total) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seedloader::remote
