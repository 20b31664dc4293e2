#include "remote/object_reader.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>

#include "remote/http_client.h"
#include "remote/s3_config.h"
#include "remote/s3_config_cache.h"
#include "seedloader/error.h"

namespace seedloader::remote {
namespace {

// Where a transfer's bytes go: put(pos, bytes) stores them at byte `pos` of the
// object; restart() forgets everything stored (a server ignored the Range).
struct Sink {
  std::function<void(std::uint64_t, const char*, std::size_t)> put;
  std::function<void()> restart;
};

struct Attempt {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string curl_error;
  std::string error_body;  // the start of a non-2xx answer (S3 names its error there)
  bool too_long = false;   // more bytes than the caller expected
  std::string redirect;    // a 3xx answer's Location, made absolute
  bool body_cut = false;   // a non-2xx body cut after its first 512 bytes
  // After redirects: the origin that answered, and whether the credentials were
  // left out for it (another origin than the URL's).
  std::string redirected_to;
  bool without_credentials = false;
};

// When an object's read must end, if it must.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;

constexpr int kMaxRedirects = 5;
// What a cut-off transfer must have moved (or half of what was left) to resume
// without counting as an attempt.
constexpr std::uint64_t kProgressBytes = 64 << 10;

// One request's body, as HttpClient hands it over (a BodyWriter).
struct Transfer {
  const Sink& sink;
  std::uint64_t pos;    // next byte of the object to store
  std::uint64_t limit;  // the object's expected size (UINT64_MAX: unknown)
  std::uint64_t range_from;
  Attempt result;
  bool checked_status = false;

  // False stops the transfer.
  bool on_body(long status, const char* data, std::size_t n) {
    if (!checked_status) {
      checked_status = true;
      result.status = status;
      if (status == 200 && range_from > 0) {
        sink.restart();  // the whole object came back, not the range asked for
        pos = 0;
      }
    }
    if (status < 200 || status >= 300) {
      const std::size_t keep = std::min<std::size_t>(n, 512 - result.error_body.size());
      result.error_body.append(data, keep);
      if (keep == n) return true;
      result.body_cut = true;  // the rest is not read: an error body may not end
      return false;
    }
    if (n > limit - pos) {
      result.too_long = true;
      return false;
    }
    sink.put(pos, data, n);
    pos += n;
    return true;
  }
};

// "HTTP 403 (AccessDenied)" or "curl error 7: Failed to connect ...", and the
// origin a redirect led to.
std::string describe(const Attempt& a) {
  std::string s;
  if (a.code != CURLE_OK) {
    s = "curl error " + std::to_string(a.code) + ": " +
        curl_failure(a.code, a.curl_error);
  } else {
    s = "HTTP " + std::to_string(a.status);
    const std::size_t b = a.error_body.find("<Code>");
    const std::size_t e = a.error_body.find("</Code>");
    if (b != std::string::npos && e != std::string::npos && e > b + 6)
      s += " (" + a.error_body.substr(b + 6, e - b - 6) + ")";
  }
  if (!a.redirected_to.empty()) {
    s += " from " + a.redirected_to + ", where a redirect led" +
         (a.without_credentials ? " (another origin: sent without credentials)" : "");
  }
  return s;
}

std::string unescape(const std::string& s) {
  int n = 0;
  char* plain = curl_easy_unescape(nullptr, s.data(), static_cast<int>(s.size()), &n);
  if (!plain) throw std::bad_alloc();
  std::string out(plain, static_cast<std::size_t>(n));
  curl_free(plain);
  return out;
}

// "scheme://host:port" of an absolute http(s) URL, the host in lower case and the
// port explicit; empty when it does not parse.
std::string origin_of(const std::string& url) {
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), &curl_url_cleanup);
  if (!u) throw std::bad_alloc();
  if (curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return {};
  const auto part = [&](CURLUPart which, unsigned flags) {
    char* text = nullptr;
    if (curl_url_get(u.get(), which, &text, flags) != CURLUE_OK || !text)
      return std::string();
    std::string out(text);
    curl_free(text);
    return out;
  };
  const std::string scheme = part(CURLUPART_SCHEME, 0);
  std::string host = part(CURLUPART_HOST, 0);
  const std::string port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (scheme.empty() || host.empty() || port.empty()) return {};
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return scheme + "://" + host + ":" + port;
}

// Jitter needs no reproducibility, only to differ between processes: its state
// is seeded again in a forked child, so workers do not back off in lockstep.
double jitter() {
  thread_local std::uint64_t x = 0;
  thread_local pid_t seeded_for = -1;
  if (seeded_for != ::getpid()) {
    seeded_for = ::getpid();
    x = static_cast<std::uint64_t>(seeded_for) * 0x9E3779B97F4A7C15ull ^
            static_cast<std::uint64_t>(
                std::chrono::steady_clock::now().time_since_epoch().count()) |
        1;
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return static_cast<double>(x >> 11) / 9007199254740992.0;
}

}  // namespace

struct ObjectReader::Impl {
  explicit Impl(const FetchOptions& o)
      : options(o), s3_settings(o.aws, http, o.anonymous) {}

  const FetchOptions options;
  const HttpClient http;
  // Read on the first s3:// request, and again before temporary credentials
  // expire (in each process: a forked worker refreshes its own copy).
  S3ConfigCache s3_settings;

  // One request for bytes [from, limit) of `url`, following redirects.
  Attempt attempt(const ObjectUrl& url, const Sink& sink, std::uint64_t from,
                  std::uint64_t limit, Deadline deadline);
  // One HTTP request to `target`, with the credentials `url` has if `credentials`.
  Attempt perform(const ObjectUrl& url, const S3Config* s3, const std::string& target,
                  bool credentials, const Sink& sink, std::uint64_t from,
                  std::uint64_t limit, Deadline deadline);
  // The object's bytes [have, total) into `sink`; total UINT64_MAX: unknown, then
  // at most `cap` bytes. False only when missing_ok and the server answers 404.
  // `own` bounds this read besides options.deadline_s.
  bool fetch(const ObjectUrl& url, const Sink& sink, std::uint64_t have,
             std::uint64_t total, bool missing_ok = false, std::uint64_t cap = UINT64_MAX,
             const ReadDeadline& own = {});
};

Attempt ObjectReader::Impl::attempt(const ObjectUrl& url, const Sink& sink,
                                    std::uint64_t from, std::uint64_t limit,
                                    Deadline deadline) {
  const std::shared_ptr<const S3Config> config =
      url.scheme == ObjectUrl::Scheme::kS3 ? s3_settings.current() : nullptr;
  const S3Config* s3 = config.get();
  std::string target = s3 ? s3->http_url(url) : url.display();
  const std::string origin = origin_of(target);
  if (origin.empty() && (s3 ? s3->signed_requests() : !url.userinfo.empty()))
    throw ConfigError("GET " + url.display() + ": " + target +
                      " is not an absolute http(s) URL, so its credentials would not "
                      "be sent");
  for (int hop = 0;; ++hop) {
    // Credentials go only where the URL the user named lives.
    const std::string here = origin_of(target);
    const bool credentials = !origin.empty() && here == origin;
    Attempt a = perform(url, s3, target, credentials, sink, from, limit, deadline);
    if (hop > 0) {
      a.redirected_to = here;
      a.without_credentials = !credentials;
    }
    if (a.code != CURLE_OK || a.status < 300 || a.status >= 400 || a.redirect.empty())
      return a;
    if (hop == kMaxRedirects) {
      a.code = CURLE_TOO_MANY_REDIRECTS;
      a.curl_error = "more than " + std::to_string(kMaxRedirects) + " redirects";
      return a;
    }
    if (here.rfind("https://", 0) == 0 && a.redirect.rfind("https://", 0) != 0) {
      a.code = CURLE_UNSUPPORTED_PROTOCOL;
      a.curl_error = "a redirect from https to " + origin_of(a.redirect) +
                     " is refused (it would read the object unencrypted)";
      return a;
    }
    target = a.redirect;  // a request of its own: no option carries over
  }
}

// The SHA-256 of no bytes: the payload of every request here.
constexpr const char* kEmptyPayloadSha256 =
    "x-amz-content-sha256: "
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

Attempt ObjectReader::Impl::perform(const ObjectUrl& url, const S3Config* s3,
                                    const std::string& target, bool credentials,
                                    const Sink& sink, std::uint64_t from,
                                    std::uint64_t limit, Deadline deadline) {
  HttpRequest request;
  request.url = target;
  if (s3 && credentials && s3->signed_requests()) {
    request.aws_sigv4 = "aws:amz:" + s3->region + ":s3";
    request.login = HttpRequest::Login{s3->access_key, s3->secret_key};
    // S3 requires the payload's SHA-256 in a header of every SigV4 request (an
    // empty body's here), and curl (before 8.2) signs the header's value rather
    // than adding one: without it S3 answers 400 or SignatureDoesNotMatch.
    request.headers.push_back(kEmptyPayloadSha256);
    if (!s3->session_token.empty())
      request.headers.push_back("x-amz-security-token: " + s3->session_token);
  } else if (!s3 && credentials && !url.userinfo.empty()) {
    // The URL's user and password are percent-encoded; curl wants them plain.
    const std::size_t colon = url.userinfo.find(':');
    request.login = HttpRequest::Login{
        unescape(url.userinfo.substr(0, colon)),
        colon == std::string::npos ? "" : unescape(url.userinfo.substr(colon + 1))};
  }
  request.connect_timeout =
      std::chrono::milliseconds(static_cast<long>(options.connect_timeout_s * 1000));
  request.low_speed_bytes_s = std::max(1L, static_cast<long>(options.min_rate_bytes_s));
  request.low_speed_time_s =
      std::max(1L, static_cast<long>(std::lround(options.stall_timeout_s)));
  if (deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *deadline - std::chrono::steady_clock::now());
    request.timeout =
        std::chrono::milliseconds(std::max(1L, static_cast<long>(left.count())));
  }
  request.range_from = from;
  Transfer t{sink, from, limit, from, {}, false};
  const HttpReply reply =
      http.send(request, [&t](long status, const char* data, std::size_t n) {
        return t.on_body(status, data, n);
      });
  t.result.code = static_cast<CURLcode>(reply.code);
  if (t.result.body_cut && t.result.code == CURLE_WRITE_ERROR) t.result.code = CURLE_OK;
  t.result.curl_error = reply.error;
  t.result.status = reply.status;
  if (t.result.code == CURLE_OK && t.result.status >= 300 && t.result.status < 400)
    t.result.redirect = reply.location;
  return t.result;
}

bool ObjectReader::Impl::fetch(const ObjectUrl& url, const Sink& sink, std::uint64_t have,
                               std::uint64_t total, bool missing_ok, std::uint64_t cap,
                               const ReadDeadline& own) {
  const auto fail = [&](const std::string& why, int attempts) {
    return DataError("GET " + url.display() + ": " + why + " (" +
                     std::to_string(attempts) + " attempt" + (attempts == 1 ? "" : "s") +
                     ")");
  };
  if (!(own.seconds >= 0))
    throw ConfigError("GET " + url.display() + ": " + own.setting + " must be >= 0");
  // The earlier of the reader's bound and this read's own; an infinite one is none.
  double seconds = options.deadline_s;
  std::string setting = "deadline_s";
  if (own.seconds > 0 && (seconds == 0 || own.seconds < seconds)) {
    seconds = own.seconds;
    setting = own.setting;
  }
  const Deadline deadline =
      seconds > 0 && std::isfinite(seconds)
          ? Deadline(std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds)))
          : std::nullopt;
  const auto past_deadline = [&] {
    return deadline && std::chrono::steady_clock::now() >= *deadline;
  };
  int attempts = 0, total_attempts = 0;
  double backoff = options.first_backoff_s;
  std::uint64_t pos = have;
  std::uint64_t received = have;
  Sink counting{[&](std::uint64_t at, const char* p, std::size_t n) {
                  sink.put(at, p, n);
                  received = at + n;
                },
                [&] {
                  sink.restart();
                  received = 0;
                }};
  while (true) {
    ++total_attempts;
    const Attempt a =
        attempt(url, counting, pos, total != UINT64_MAX ? total : cap, deadline);
    if (a.too_long && total != UINT64_MAX)
      throw fail(
          "the object is longer than the " + std::to_string(total) + " bytes expected",
          total_attempts);
    if (a.too_long)
      throw fail("the object is larger than the limit of " + std::to_string(cap) +
                     " bytes for it",
                 total_attempts);
    // curl itself reports a body shorter than its Content-Length (or an
    // unfinished chunked body) as CURLE_PARTIAL_FILE: an answer that is OK is whole.
    const bool ok = a.code == CURLE_OK && a.status >= 200 && a.status < 300;
    if (ok && (total == UINT64_MAX || received == total)) return true;
    // Every byte arrived before the connection broke (a chunked body without its
    // end, a stream reset after the last frame): done; the caller checks the hash.
    if (total != UINT64_MAX && received == total) return true;
    if (missing_ok && a.code == CURLE_OK && a.status == 404) return false;
    if (ok)
      throw fail("the object has " + std::to_string(received) + " bytes, " +
                     std::to_string(total) + " were expected",
                 total_attempts);
    if (past_deadline()) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", seconds);
      throw fail("not read within " + setting + " " + limit + " s (" + describe(a) + ")",
                 total_attempts);
    }
    // A cut-off transfer that moved 64 KiB, or half of what was left, resumes at
    // once.
    // One cut for being too slow, or one that moved only a few bytes, counts as
    // an attempt: a server that trickles bytes, over one connection or many, is
    // not waited for forever.
    const std::uint64_t left = (total == UINT64_MAX ? cap : total) - pos;
    const bool progressed =
        received > pos && received - pos >= std::min(kProgressBytes, (left + 1) / 2);
    pos = received;
    if (progressed && a.code != CURLE_OPERATION_TIMEDOUT) {
      attempts = 0;  // a cut-off transfer that moved bytes resumes at once
      backoff = options.first_backoff_s;
      continue;
    }
    ++attempts;
    if (!transient_failure(a.code, a.status) || attempts >= options.max_attempts) {
      throw fail(describe(a), total_attempts);
    }
    auto pause = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(backoff * (0.5 + jitter())));
    if (deadline) pause = std::min(pause, *deadline - std::chrono::steady_clock::now());
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, options.max_backoff_s);
  }
}

ObjectReader::ObjectReader(FetchOptions options) {
  if (options.max_attempts < 1 || !(options.connect_timeout_s > 0) ||
      !(options.stall_timeout_s > 0) || !(options.first_backoff_s >= 0) ||
      !(options.max_backoff_s >= options.first_backoff_s) ||
      !(options.min_rate_bytes_s >= 1) || !(options.deadline_s >= 0)) {
    throw ConfigError(
        "FetchOptions: max_attempts must be >= 1, timeouts > 0, min_rate_bytes_s >= 1, "
        "deadline_s >= 0 and backoffs >= 0");
  }
  if (!options.aws.variables || !options.aws.clock)
    throw ConfigError("FetchOptions: aws needs a function for its variables and clock");
  impl_ = std::make_unique<Impl>(options);
}

ObjectReader::~ObjectReader() = default;

bool ObjectReader::read_if_present(const ObjectUrl& url, std::vector<std::uint8_t>& out,
                                   std::uint64_t max_bytes,
                                   const ReadDeadline& deadline) const {
  out.clear();
  const Sink sink{[&](std::uint64_t at, const char* p, std::size_t n) {
                    out.resize(at);
                    out.insert(out.end(), p, p + n);
                  },
                  [&] { out.clear(); }};
  return impl_->fetch(url, sink, 0, UINT64_MAX, true, max_bytes, deadline);
}

void ObjectReader::download(const ObjectUrl& url, int fd, std::uint64_t have,
                            std::uint64_t total) const {
  if (have >= total) return;
  const auto io_error = [&](const char* what) {
    return DataError("GET " + url.display() + ": " + what + ": " + std::strerror(errno));
  };
  const Sink sink{[&](std::uint64_t at, const char* p, std::size_t n) {
                    while (n > 0) {
                      const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
                      if (w < 0 && errno == EINTR) continue;
                      if (w <= 0) throw io_error("cannot write the cache file");
                      p += w;
                      at += static_cast<std::uint64_t>(w);
                      n -= static_cast<std::size_t>(w);
                    }
                  },
                  [&] {
                    if (::ftruncate(fd, 0) != 0) throw io_error("cannot truncate");
                  }};
  impl_->fetch(url, sink, have, total);
}

}  // namespace seedloader::remote
