#include "tests/remote/local_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/common/cross_check.h"

namespace seedloader::testing_util {
namespace {

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
}

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("free_port: cannot bind 127.0.0.1:0");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string server_missing(const std::string& path, const std::string& name) {
  if (!path.empty()) return "";
  const std::string why =
      name + " is not installed (scripts/python_env.sh --test-servers)";
  if (cross_checks_required()) ADD_FAILURE() << why;
  return why;
}

ServerProcess::ServerProcess(std::vector<std::string> argv, std::vector<std::string> env,
                             int port, std::string log)
    : port_(port), log_(std::move(log)) {
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int out = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) throw std::runtime_error("cannot write " + log_);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
    for (std::string& e : env) ::putenv(e.data());
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out);
  if (pid_ < 0) throw std::runtime_error("fork failed for " + argv[0]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!accepts(port_)) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error(argv[0] + " exited before listening on port " +
                               std::to_string(port_) + ":\n" + tail_of(log_));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop();
      throw std::runtime_error(argv[0] + " did not listen on port " +
                               std::to_string(port_) + " within 20 s:\n" + tail_of(log_));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ServerProcess::~ServerProcess() { stop(); }

void ServerProcess::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 250; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

namespace {

// Writes nginx's configuration into `dir` and returns its command line.
std::vector<std::string> nginx_argv(const std::string& root, const std::string& dir,
                                    int port) {
  std::filesystem::create_directories(dir + "/tmp");
  std::ofstream conf(dir + "/nginx.conf");
  conf << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
       << "error_log " << dir << "/error.log;\npid " << dir << "/nginx.pid;\n"
       << "events { worker_connections 256; }\n"
       << "http {\n"
       << "  log_format requests '$request_method $uri $status $body_bytes_sent "
          "$remote_user';\n"
       << "  access_log " << dir << "/access.log requests;\n"
       << "  client_body_temp_path " << dir << "/tmp;\n"
       << "  proxy_temp_path " << dir << "/tmp;\n"
       << "  fastcgi_temp_path " << dir << "/tmp;\n"
       << "  uwsgi_temp_path " << dir << "/tmp;\n"
       << "  scgi_temp_path " << dir << "/tmp;\n"
       << "  server { listen 127.0.0.1:" << port << "; root " << root << "; }\n"
       << "}\n";
  return {"/usr/sbin/nginx", "-p", dir, "-c", dir + "/nginx.conf", "-e",
          dir + "/error.log"};
}

}  // namespace

Nginx::Nginx(const std::string& root, const std::string& dir)
    : dir_(dir), server_([&] {
        const int port = free_port();
        return ServerProcess(nginx_argv(root, dir, port), {}, port, dir + "/nginx.out");
      }()) {}

std::vector<std::string> Nginx::requests(const std::string& path,
                                         std::size_t at_least) const {
  // nginx logs a request once its answer is sent, so the line may trail the
  // client by a moment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<std::string> out;
  while (true) {
    out = logged(path);
    if (out.size() >= at_least || std::chrono::steady_clock::now() > deadline) return out;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> Nginx::logged(const std::string& path) const {
  std::ifstream in(dir_ + "/access.log");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string method, uri, status, bytes;
    fields >> method >> uri >> status >> bytes;
    if (uri == path) out.push_back(status + " " + bytes);
  }
  return out;
}

std::string rclone_path() {
  if (const char* p = std::getenv("SEEDLOADER_RCLONE"); p && *p) return p;
  const std::string venv = SEEDLOADER_SOURCE_DIR "/build/venv/bin/rclone";
  return ::access(venv.c_str(), X_OK) == 0 ? venv : "";
}

RcloneS3::RcloneS3(const std::string& root, const std::string& dir,
                   const std::string& access_key, const std::string& secret_key)
    : server_([&] {
        std::filesystem::create_directories(dir);
        const int port = free_port();
        return ServerProcess(
            {rclone_path(), "serve", "s3", "--addr", "127.0.0.1:" + std::to_string(port),
             "--auth-key", access_key + "," + secret_key, root},
            {"RCLONE_CONFIG=" + dir + "/rclone.conf", "HOME=" + dir}, port,
            dir + "/rclone.out");
      }()) {}

std::string moto_python() {
  if (const char* p = std::getenv("SEEDLOADER_MOTO_PYTHON"); p && *p) return p;
  const std::string venv = SEEDLOADER_SOURCE_DIR "/build/moto-venv/bin/python";
  return ::access(venv.c_str(), X_OK) == 0 ? venv : "";
}

MotoServer::MotoServer(const std::string& folder, int ttl, const std::string& log,
                       const std::string& token, const std::string& out)
    : server_([&] {
        const int port = free_port();
        return ServerProcess(
            {moto_python(), SEEDLOADER_SOURCE_DIR "/tests/remote/moto_server.py",
             std::to_string(port), folder, std::to_string(ttl), log, token},
            {}, port, out);
      }()) {}

CredentialServer::CredentialServer(const std::string& dir, const std::string& key,
                                   const std::string& secret, int ttl)
    : log_(dir + "/issued.log"), server_([&] {
        const int port = free_port();
        return ServerProcess(
            {"/usr/bin/python3",
             SEEDLOADER_SOURCE_DIR "/tests/remote/credential_server.py",
             std::to_string(port), log_, key, secret, std::to_string(ttl)},
            {}, port, dir + "/credential_server.out");
      }()) {}

int CredentialServer::issued(const std::string& kind) const {
  std::ifstream in(log_);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line == kind;
  return n;
}

void CredentialServer::fail_container() const { std::ofstream(log_ + ".fail") << ""; }

}  // namespace seedloader::testing_util
