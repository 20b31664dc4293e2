// The project's one error model: every failure is an exception derived from
// seedloader::Error. It lives in base/, below every other module, so all can use it.
// ConfigError: invalid options, raised at construction.
// DataError:   bad input; the message names the file/shard and the sample index.
// WorkerError: a worker process failed; carries worker id, pid, signal or exit code.
// TimeoutError, CommError: a blocking wait or a collective did not complete.
#pragma once

#include <sys/types.h>
#include <stdexcept>
#include <string>

namespace seedloader {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
