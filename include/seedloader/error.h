// The project's one error model: every failure is an exception derived from
// seedloader::Error. It lives in base/, below every other module, so all can use it.
// ConfigError: invalid options, raised at construction.
// DataError:   bad input; the message names the file/shard and the sample index.
// WorkerError: a worker process failed; carries worker id, pid, signal or exit code.
// TimeoutError, CommError: a blocking wait or a collective did not complete.
// No message carries a credential: Error's constructor passes every message
// through redact_credentials(), which knows the secrets register_secret() was
// given and the shapes of credentials in URLs, headers and answers.
#pragma once

#include <sys/types.h>
#include <stdexcept>
#include <string>
#include <string_view>

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

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message)
      : std::runtime_error(redact_credentials(message)) {}
  explicit Error(const char* message) : Error(std::string(message)) {}
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
  using Error::Error;
};

class CommError : public Error {
 public:
  using Error::Error;
};

// What is known about a failed worker; fields not known are -1.
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
};

class WorkerError : public Error {
 public:
  WorkerError(const std::string& message, WorkerFailure failure)
      : Error(message), failure_(failure) {}
  const WorkerFailure& failure() const { return failure_; }

 private:
  WorkerFailure failure_;
};

}  // namespace seedloader
