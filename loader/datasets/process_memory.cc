#include "loader/datasets/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

#include "seedloader/error.h"

namespace seedloader {

ProcessMemory read_process_memory(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/smaps_rollup";
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path);
  ProcessMemory m;
  bool seen_pss = false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    std::uint64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "Pss:") {
      m.pss_bytes = kib * 1024;
      seen_pss = true;
    } else if (key == "Rss:") {
      m.rss_bytes = kib * 1024;
    } else if (key == "Private_Clean:" || key == "Private_Dirty:") {
      m.private_bytes += kib * 1024;
    }
  }
  if (!seen_pss) throw Error(path + " has no Pss line");
  return m;
}

}  // namespace seedloader
