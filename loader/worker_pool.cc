#include "loader/worker_pool.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "base/check.h"

namespace seedloader {

namespace {
// How often stop() looks again for children that are leaving on their own.
constexpr std::chrono::milliseconds kReapPoll{1};

WorkerExit decode(int worker, pid_t pid, int status) {
  WorkerExit e;
  e.worker = worker;
  e.pid = pid;
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  return e;
}
}  // namespace

std::string WorkerExit::describe() const {
  std::string s =
      "worker " + std::to_string(worker) + " (pid " + std::to_string(pid) + ")";
  if (signal >= 0) {
    const char* abbrev = sigabbrev_np(signal);
    s += " was killed by signal " + std::to_string(signal) + " (SIG" +
         (abbrev ? abbrev : "?") + ")";
  } else if (exit_code >= 0) {
    s += " exited with code " + std::to_string(exit_code);
  } else {
    s += " is gone (its exit status was collected elsewhere)";
  }
  return s;
}

void WorkerPool::start(int n, const std::function<void(int)>& body) {
  pids_.assign(n, -1);
  forking_tid_ = static_cast<pid_t>(syscall(SYS_gettid));
  for (int w = 0; w < n; ++w) {
    std::fflush(nullptr);  // so buffered output is not written twice
    pid_t pid = fork();
    if (pid < 0) {
      int err = errno;
      kill_all();
      errno = err;
      SL_CHECK_SYS(pid);
    }
    if (pid == 0) {
      try {
        body(w);
      } catch (...) {
      }
      // body() must not return; leave without running atexit handlers.
      _exit(kWorkerFailedExit);
    }
    pids_[w] = pid;
  }
}

void WorkerPool::start_exec(const std::vector<std::vector<std::string>>& commands,
                            const std::vector<int>& keep_fds) {
  // Everything the child needs is built here: after fork it may not allocate.
  std::vector<std::vector<char*>> argvs;
  for (const auto& command : commands) {
    std::vector<char*>& argv = argvs.emplace_back();
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
  }
  const std::string failed =
      "seedloader: cannot start the worker program " +
      (commands.empty() || commands[0].empty() ? std::string("(none)") : commands[0][0]) +
      "\n";
  const pid_t parent = getpid();
  start(static_cast<int>(commands.size()), [&](int w) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // kept across execve
    if (getppid() != parent) _exit(0);
    for (int fd : keep_fds) fcntl(fd, F_SETFD, 0);
    execv(argvs[w][0], argvs[w].data());
    const ssize_t ignored = write(STDERR_FILENO, failed.data(), failed.size());
    (void)ignored;
    _exit(kWorkerExecFailedExit);
  });
}

void WorkerPool::adopt(std::vector<pid_t> pids) {
  pids_ = std::move(pids);
  forking_tid_ = static_cast<pid_t>(syscall(SYS_gettid));
}

std::vector<pid_t> WorkerPool::release() { return std::exchange(pids_, {}); }

bool WorkerPool::forking_thread_alive() const {
  // Signal 0 delivers nothing; ESRCH means no such thread in this process.
  return syscall(SYS_tgkill, getpid(), forking_tid_, 0) == 0 || errno != ESRCH;
}

std::optional<WorkerExit> WorkerPool::poll(int w) {
  if (pids_.empty() || pids_[w] < 0) return std::nullopt;
  int status = 0;
  pid_t r = waitpid(pids_[w], &status, WNOHANG);
  WorkerExit e;
  if (r < 0 && errno == ECHILD) {
    // Reaped elsewhere (e.g. SIGCHLD set to SIG_IGN): gone, status unknown.
    e.worker = w;
    e.pid = pids_[w];
  } else if (r == pids_[w]) {
    e = decode(w, pids_[w], status);
  } else {
    return std::nullopt;
  }
  pids_[w] = -1;
  return e;
}

void WorkerPool::stop(std::chrono::milliseconds grace) {
  if (pids_.empty()) return;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  bool alive = true;
  while (alive) {
    alive = false;
    for (pid_t& pid : pids_) {
      if (pid < 0) continue;
      int status = 0;
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno == ECHILD)) {
        pid = -1;
      } else {
        alive = true;
      }
    }
    if (!alive || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kReapPoll);
  }
  for (pid_t& pid : pids_) {
    if (pid < 0) continue;
    kill(pid, SIGKILL);
    int status = 0;
    // SIGKILL cannot be caught, so this wait ends as soon as the kernel tears
    // the process down; retry only on EINTR.
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
  }
  pids_.clear();
}

}  // namespace seedloader
