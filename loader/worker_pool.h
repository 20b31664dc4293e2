// WorkerPool: the forked worker processes of one loader. It owns the children:
// whatever happens, each is killed (if still running) and reaped before the pool
// goes away, so no zombie or orphan is left behind. Used by the main process's
// single consumer thread only; not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace seedloader {

// The exit code of a worker whose body ended in an exception or returned
// (EX_SOFTWARE, sysexits.h): an internal failure, not a signal or a user code.
inline constexpr int kWorkerFailedExit = 70;

// The exit code of a worker whose program could not be started (exec failed),
// as a shell reports a command it cannot run.
inline constexpr int kWorkerExecFailedExit = 127;

// A stop() grace of zero: SIGKILL at once, without waiting for the children.
inline constexpr std::chrono::milliseconds kKillNow{0};

// How a worker ended, from waitpid.
struct WorkerExit {
  int worker = -1;
  pid_t pid = -1;
  int signal = -1;     // killed by this signal, or -1
  int exit_code = -1;  // exited with this code, or -1
  // "worker 2 (pid 123) was killed by signal 9 (SIGKILL)" /
  // "worker 2 (pid 123) exited with code 3"
  std::string describe() const;
};

class WorkerPool {
 public:
  WorkerPool() = default;
  ~WorkerPool() { kill_all(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Forks n children; child w runs body(w), which must end with _exit and never
  // return. Throws Error (after killing the ones started) when fork fails.
  // REQUIRES: !running().
  void start(int n, const std::function<void(int)>& body);
  // Forks n children; child w runs the program commands[w] (argv, argv[0] a
  // path) with the descriptors `keep_fds` left open across the exec, and with
  // PR_SET_PDEATHSIG armed as for a fork. Between fork and exec the child only
  // makes async-signal-safe calls, so a parent with threads (or CUDA) can start
  // workers this way. An exec that fails writes why to stderr and exits with
  // kWorkerExecFailedExit. Throws Error (after killing the ones started) when
  // fork fails. REQUIRES: !running(), commands.size() == n.
  void start_exec(const std::vector<std::vector<std::string>>& commands,
                  const std::vector<int>& keep_fds);
  // Takes running children `pids` (another pool's release()) as workers
  // 0..n-1, forked by the calling thread. REQUIRES: !running().
  void adopt(std::vector<pid_t> pids);
  // Gives the children up without stopping or reaping them: the caller owns
  // them (to adopt or reap). The pool is then empty.
  std::vector<pid_t> release();
  bool running() const { return !pids_.empty(); }
  int size() const { return static_cast<int>(pids_.size()); }
  // -1 once the worker is reaped.
  pid_t pid(int w) const { return pids_[w]; }
  // False once the thread that called start() has exited. Workers arm
  // PR_SET_PDEATHSIG, which the kernel fires when that *thread* ends, so by then
  // they have been sent SIGKILL. (A thread id reused by a new thread reads as
  // alive.) Answers for the last start().
  bool forking_thread_alive() const;

  // Non-blocking: when worker w has ended, reaps it and says how.
  std::optional<WorkerExit> poll(int w);

  // Waits up to `grace` for every child to leave on its own (the caller has
  // asked them to), then SIGKILLs the rest; reaps all. Never blocks longer than
  // grace plus the time the kernel takes to deliver SIGKILL.
  void stop(std::chrono::milliseconds grace);
  // SIGKILL and reap every child now.
  void kill_all() { stop(kKillNow); }

 private:
  std::vector<pid_t> pids_;
  pid_t forking_tid_ = -1;  // the thread that ran start()
};

}  // namespace seedloader
