// The memory a process really costs, from /proc/PID/smaps_rollup: its
// proportional set size (each resident page divided by the number of processes
// mapping it) and its private pages. Used to show that forked workers share the
// dataset index instead of copying it. Linux only; stateless.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace seedloader {

struct ProcessMemory {
  std::uint64_t pss_bytes = 0;
  std::uint64_t private_bytes = 0;  // Private_Clean + Private_Dirty
  std::uint64_t rss_bytes = 0;
};

// Throws Error when the file cannot be read (no such process, or a kernel
// without smaps_rollup).
ProcessMemory read_process_memory(pid_t pid);

}  // namespace seedloader
