// The project's one error model: every failure is an exception derived from
// seedloader::Error. It lives in base/, below every other module, so all can use it.
// ConfigError: invalid options, raised at construction.
// DataError:   bad input; the message names the file/shard and the sample index.
// WorkerError: a worker process failed; carries worker id, pid, signal or exit code.
// TimeoutError, CommError: a blocking wait or a collective did not complete.
// SlotHeldError: a batch's slot is still held by one the caller keeps.
// Every error carries an ErrorCode, which callers that act on an error (the Python
// binding) read instead of its text; the classes carry the facts they act on.
// No message carries a credential: Error's constructor passes every message
// through redact_credentials(), which knows the secrets register_secret() was
// given and the shapes of credentials in URLs, headers and answers.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace seedloader {

// `text` without a credential: the one function every message, report and trace
// that can show one goes through. It removes
// - the user:password of every URL ("http://alice:pw@host/x" -> "http://host/x"):
//   the authority after each "scheme://" up to its last '@' before the path; or,
//   for a password holding an unencoded '/', when a ':' in the authority is
//   followed by something other than a port, up to the next '@' before a space
//   or quote, and when it is followed by digits, up to an '@' in the first path
//   segment ("http://u:2024/x@host/" -> "http://host/"; a path "host:8080/a@b/"
//   loses as much: safe, not exact);
// and replaces with "[redacted]"
// - every value register_secret() was given, whole or any 16 characters of it
//   in a row (an echo cut short);
// - the value of a presigned URL's or a form's credential parameters
//   (X-Amz-Signature=, X-Amz-Credential=, X-Amz-Security-Token=,
//   X-Goog-Signature=, X-Goog-Credential=, Signature=, AWSAccessKeyId=, sig=,
//   WebIdentityToken=, access_token=, id_token=), up to '&', a space or a quote;
// - an Authorization, Proxy-Authorization, X-Amz-Security-Token or
//   X-aws-ec2-metadata-token header's value, to the end of its line;
// - the text of an XML element or JSON member named AccessKeyId,
//   SecretAccessKey, SessionToken, Token or WebIdentityToken (what credential
//   services answer with);
// - JSON Web Tokens (base64url words starting "eyJ") and AWS access key ids
//   (AKIA or ASIA and 16 capitals or digits).
// Names match in any case.
std::string redact_credentials(std::string_view text);

// Adds `secret` (a token, key or password this process holds or sends; a caller
// that sends it encoded, percent-encoded in a form, adds that form too) to what
// redact_credentials() replaces. Values shorter than 8 characters are not
// added: no real credential is that short, and hiding one (a test key "test")
// would garble every message that has the word. The 64 newest values are
// kept. Thread-safe; a forked child keeps them.
void register_secret(std::string_view secret);

// What went wrong, for a caller that acts on an error without reading its text.
// Most errors are kUnspecified: their class and message say all there is.
enum class ErrorCode {
  kUnspecified,
  kBatchFailed,       // WorkerError: a sample's get() (or the batch's mix) threw; the
                      // worker goes on (WorkerFailure::recoverable)
  kWorkerInitFailed,  // WorkerError: the user's worker_init threw
  kWorkerDied,        // WorkerError: a worker exited or was killed
  kTimedOut,          // TimeoutError
  kSlotHeld,          // SlotHeldError
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorCode code = ErrorCode::kUnspecified)
      : std::runtime_error(redact_credentials(message)), code_(code) {}
  explicit Error(const char* message) : Error(std::string(message)) {}

  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

class ConfigError : public Error {
 public:
  using Error::Error;
};

class DataError : public Error {
 public:
  using Error::Error;
};

class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& message)
      : Error(message, ErrorCode::kTimedOut) {}
  // A wait that gave up after `waited`.
  TimeoutError(const std::string& message, std::chrono::milliseconds waited)
      : Error(message, ErrorCode::kTimedOut), waited_(waited) {}

  // How long the wait lasted, where the thrower said.
  std::optional<std::chrono::milliseconds> waited() const { return waited_; }

 private:
  std::optional<std::chrono::milliseconds> waited_;
};

class CommError : public Error {
 public:
  using Error::Error;
};

// A batch cannot be loaded because its slot is still held by an earlier batch the
// caller keeps, and that batch cannot be moved aside (the region is pinned).
class SlotHeldError : public Error {
 public:
  SlotHeldError(const std::string& message, std::uint64_t batch, int slots)
      : Error(message, ErrorCode::kSlotHeld), batch_(batch), slots_(slots) {}

  std::uint64_t batch() const { return batch_; }  // the batch that cannot be loaded
  int slots() const { return slots_; }            // the loader's slots in all

 private:
  std::uint64_t batch_;
  int slots_;
};

// Mixed into what a data set's get() throws (a DataError or another Error) when
// it stands for an exception raised in the data set's own language, a Python
// dataset's KeyError: the loader reports that exception's type and, where it was
// raised in the caller's process, the exception itself (WorkerFailure), so that
// a binding can raise the same type again and chain the original. A catch clause
// finds it with dynamic_cast; throw_as_dataset_exception() throws one.
class DatasetException {
 public:
  DatasetException(std::string type, std::exception_ptr original)
      : type_(std::move(type)), original_(std::move(original)) {}
  virtual ~DatasetException();

  // The exception's type as its language names it ("KeyError",
  // "mymodule.BadSample").
  const std::string& type() const { return type_; }
  // The exception itself when it was raised in this process; else null.
  const std::exception_ptr& original() const { return original_; }

 private:
  std::string type_;
  std::exception_ptr original_;
};

// Throws `error` with DatasetException(type, original) mixed in: a clause that
// catches E (a DataError under BadSample::kSkip) still catches it.
template <typename E>
[[noreturn]] void throw_as_dataset_exception(E error, std::string type,
                                             std::exception_ptr original) {
  struct Raised : E, DatasetException {
    Raised(E e, DatasetException d) : E(std::move(e)), DatasetException(std::move(d)) {}
  };
  throw Raised(std::move(error), DatasetException(std::move(type), std::move(original)));
}

// What is known about a failed worker; numbers not known are -1.
struct WorkerFailure {
  int worker = -1;
  pid_t pid = -1;
  int signal = -1;       // terminating signal, when it was killed
  int exit_code = -1;    // exit status, when it exited
  long long batch = -1;  // batch number it was working on
  long long index = -1;  // sample index, when the failure is tied to one
  // A sample's get() failed and the worker goes on: the epoch continues with the
  // next batch (as torch's loader does after a dataset's exception).
  bool recoverable = false;
  // get() threw a DatasetException: its type() (empty otherwise, or when the name
  // was too long to cross from a worker), and its original() (null otherwise, and
  // always when the sample was read in a worker process).
  std::string exception_type;
  std::exception_ptr original;
};

class WorkerError : public Error {
 public:
  // REQUIRES: code is kBatchFailed, kWorkerInitFailed or kWorkerDied.
  WorkerError(const std::string& message, WorkerFailure failure, ErrorCode code)
      : Error(message, code), failure_(std::move(failure)) {}
  const WorkerFailure& failure() const { return failure_; }

 private:
  WorkerFailure failure_;
};

}  // namespace seedloader
