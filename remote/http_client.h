// HttpClient: HTTP(S) requests through libcurl, with what the requests of this
// module share, so it is set in one place: http and https only, no redirect
// followed (a caller that follows one decides what goes with it), no signals (safe
// in threads), the timeouts a request names, and one wording of a failed transfer
// (curl_failure). Every request of the module goes through it: objects
// (ObjectReader) and the credential chain's STS, container and metadata requests.
// Connections are kept alive in a pool of curl handles, one per request in flight.
// A process forked after a handle was opened never uses the parent's connections:
// the pool belongs to the process that filled it.
// Retries are the caller's: an object read resumes with Range requests and backs
// off (ObjectReader), the metadata service is asked a set number of times.
// Safe across threads; each request uses its own handle.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace seedloader::remote {

struct HttpRequest {
  enum class Method { kGet, kPut, kPost };
  Method method = Method::kGet;  // PUT sends an empty body, POST sends `body`
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  std::chrono::milliseconds connect_timeout{0};  // 0: curl's own (300 s)
  std::chrono::milliseconds timeout{0};          // the whole request; 0: none
  // A transfer moving fewer than low_speed_bytes_s bytes a second, averaged over
  // low_speed_time_s seconds, is cut off (0: never).
  long low_speed_bytes_s = 0;
  long low_speed_time_s = 0;
  std::uint64_t range_from = 0;  // > 0: bytes [range_from, end) only
  bool no_proxy = false;         // straight to the host, whatever *_proxy says
  // Basic authentication's user and password; with aws_sigv4
  // ("aws:amz:REGION:SERVICE") the access key and secret that SigV4 signs with.
  struct Login {
    std::string user;
    std::string password;
  };
  std::optional<Login> login;
  std::string aws_sigv4;
};

// What one request came to.
struct HttpReply {
  int code = 0;          // curl's result: 0 (CURLE_OK) when the answer came whole
  long status = 0;       // the answer's HTTP status, once one came
  std::string error;     // curl's error text, when it wrote one
  std::string location;  // a 3xx answer's Location, made absolute
  bool answered() const { return code == 0; }
};

// Whether a request that came to curl's `code` and HTTP `status` is worth another
// try: no connection, a timeout, a cut transfer, HTTP 5xx, 429 or 408.
bool transient_failure(int code, long status);

// How a failed transfer is named: curl's error text, else its code's.
std::string curl_failure(int code, const std::string& error);

// Receives the body as it arrives, with the answer's status; false stops the
// transfer (code then CURLE_WRITE_ERROR). What it throws ends the transfer and
// comes out of send().
using BodyWriter = std::function<bool(long status, const char* data, std::size_t n)>;

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One request. Throws what `write` throws, or std::bad_alloc.
  HttpReply send(const HttpRequest& request, const BodyWriter& write) const;
  // One request whose body goes to `body`; a body longer than max_bytes stops
  // the transfer (CURLE_WRITE_ERROR).
  HttpReply send(const HttpRequest& request, std::string& body,
                 std::size_t max_bytes) const;

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
};

}  // namespace seedloader::remote
