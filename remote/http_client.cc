#include "remote/http_client.h"

#include <curl/curl.h>
#include <unistd.h>

#include <exception>
#include <mutex>
#include <new>

namespace seedloader::remote {
namespace {

// One transfer's state, for curl's body callback.
struct CurlTransfer {
  CURL* curl;
  const BodyWriter& write;
  long status = 0;
  bool have_status = false;
  std::exception_ptr error;  // thrown by `write`, kept out of curl's frames
};

std::size_t write_body(char* data, std::size_t, std::size_t n, void* user) {
  auto& t = *static_cast<CurlTransfer*>(user);
  if (!t.have_status) {
    t.have_status = true;
    curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &t.status);
  }
  try {
    return t.write(t.status, data, n) ? n : 0;
  } catch (...) {
    t.error = std::current_exception();
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
}

}  // namespace

bool transient_failure(int code, long status) {
  if (code == CURLE_OK) return status >= 500 || status == 429 || status == 408;
  switch (static_cast<CURLcode>(code)) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_AGAIN:
      return true;
    default:
      return false;
  }
}

std::string curl_failure(int code, const std::string& error) {
  return error.empty() ? curl_easy_strerror(static_cast<CURLcode>(code)) : error;
}

// The idle handles of process `owner`, their connections open.
struct HttpClient::Pool {
  std::mutex mutex;
  std::vector<CURL*> idle;
  pid_t owner = ::getpid();

  CURL* acquire() {
    std::lock_guard<std::mutex> lock(mutex);
    if (owner != ::getpid()) {
      // A forked child: the parent's handles share its sockets (and TLS state),
      // so using or even closing them here would corrupt the parent's
      // connections. They are left alone, a few kilobytes.
      idle.clear();
      owner = ::getpid();
    }
    if (idle.empty()) {
      CURL* c = curl_easy_init();
      if (!c) throw std::bad_alloc();
      return c;
    }
    CURL* c = idle.back();
    idle.pop_back();
    return c;
  }
  void release(CURL* c) {
    curl_easy_reset(c);  // keeps the connection cache; no option carries over
    std::lock_guard<std::mutex> lock(mutex);
    if (owner == ::getpid()) {
      idle.push_back(c);
    }  // else: acquired before a fork in another thread; see acquire()
  }
};

HttpClient::HttpClient() : pool_(std::make_unique<Pool>()) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpClient::~HttpClient() {
  if (pool_->owner == ::getpid()) {
    for (CURL* c : pool_->idle) curl_easy_cleanup(c);
  }
}

HttpReply HttpClient::send(const HttpRequest& request, const BodyWriter& write) const {
  CURL* c = pool_->acquire();
  const std::unique_ptr<CURL, std::function<void(CURL*)>> handle(
      c, [this](CURL* h) { pool_->release(h); });
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(nullptr,
                                                             &curl_slist_free_all);
  for (const std::string& h : request.headers) {
    curl_slist* next = curl_slist_append(headers.get(), h.c_str());
    if (!next) throw std::bad_alloc();
    headers.release();  // appended to: the head is the same, or the list is new
    headers.reset(next);
  }
  char error[CURL_ERROR_SIZE] = {};
  CurlTransfer t{c, write};
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  if (request.connect_timeout.count() > 0)
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(request.connect_timeout.count()));
  if (request.timeout.count() > 0)
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  if (request.low_speed_bytes_s > 0) {
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, request.low_speed_bytes_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, request.low_speed_time_s);
  }
  if (request.login) {
    if (!request.aws_sigv4.empty())
      curl_easy_setopt(c, CURLOPT_AWS_SIGV4, request.aws_sigv4.c_str());
    curl_easy_setopt(c, CURLOPT_USERNAME, request.login->user.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, request.login->password.c_str());
  }
  if (request.no_proxy) curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  const std::string range = std::to_string(request.range_from) + "-";
  if (request.range_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  if (request.method == HttpRequest::Method::kPost) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  } else if (request.method == HttpRequest::Method::kPut) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE, 0L);
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &write_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  HttpReply reply;
  reply.code = curl_easy_perform(c);
  if (t.error) std::rethrow_exception(t.error);
  reply.error = error;
  reply.status = t.status;
  if (!t.have_status) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  // Also when the transfer was stopped in the body: a caller that reads only an
  // error body's start still follows the redirect.
  if (reply.status >= 300 && reply.status < 400) {
    char* next = nullptr;
    if (curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &next) == CURLE_OK && next)
      reply.location = next;
  }
  return reply;
}

HttpReply HttpClient::send(const HttpRequest& request, std::string& body,
                           std::size_t max_bytes) const {
  body.clear();
  return send(request, [&](long, const char* data, std::size_t n) {
    if (body.size() + n > max_bytes) return false;
    body.append(data, n);
    return true;
  });
}

}  // namespace seedloader::remote
