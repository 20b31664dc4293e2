#include "loader/worker_hooks.h"

#include <mutex>
#include <utility>
#include <vector>

namespace seedloader {

namespace {
std::mutex& hooks_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::function<void()>>& hooks() {
  static std::vector<std::function<void()>> h;
  return h;
}
}  // namespace

void add_worker_start_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hooks_mutex());
  hooks().push_back(std::move(hook));
}

void run_worker_start_hooks() {
  // No lock: in a forked child the mutex may have been copied locked, and the
  // child has no other thread that could be registering.
  for (const auto& hook : hooks()) hook();
}

}  // namespace seedloader
