// Process-wide hooks run first thing in every forked worker, before any sample
// is read. Modules that link thread pools the engine does not know about
// register one here, e.g. transforms/ caps OpenCV with cv::setNumThreads(1), so
// the engine itself does not depend on OpenCV. Register from the main thread
// before any DataLoader forks; the worker runs its own copy without locking.
#pragma once

#include <functional>

namespace seedloader {

void add_worker_start_hook(std::function<void()> hook);

// Runs the hooks in registration order (in a freshly forked worker).
void run_worker_start_hooks();

}  // namespace seedloader
