#include <charconv>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {

constexpr const char* kLaunchNames[] = {
    "worker",       "parent",    "first_task",        "start_epoch", "region_fd",
    "region_bytes", "spares_fd", "spare_block_bytes", "spare_count", "digest"};
constexpr std::size_t kLaunchCount = std::size(kLaunchNames);

template <typename T>
T launch_number(const std::vector<std::string>& args, std::size_t i) {
  T value{};
  const std::string& text = args[i];
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw ConfigError(std::string("worker launch: argument ") + std::to_string(i + 1) +
                      " (" + kLaunchNames[i] + ") is '" + text +
                      "', not a decimal number of its range");
  }
  return value;
}

}  // namespace

std::vector<std::string> WorkerLaunch::arguments() const {
  return {std::to_string(worker),      std::to_string(parent),
          std::to_string(first_task),  std::to_string(start_epoch),
          std::to_string(region_fd),   std::to_string(region_bytes),
          std::to_string(spares_fd),   std::to_string(spare_block_bytes),
          std::to_string(spare_count), std::to_string(digest)};
}

WorkerLaunch WorkerLaunch::parse(const std::vector<std::string>& args) {
  if (args.size() != kLaunchCount) {
    std::string names;
    for (const char* name : kLaunchNames)
      names += (names.empty() ? "" : ", ") + std::string(name);
    throw ConfigError("worker launch: " + std::to_string(args.size()) +
                      " arguments where " + std::to_string(kLaunchCount) + " (" + names +
                      ") are expected");
  }
  WorkerLaunch l;
  l.worker = launch_number<int>(args, 0);
  l.parent = launch_number<std::int64_t>(args, 1);
  l.first_task = launch_number<std::uint64_t>(args, 2);
  l.start_epoch = launch_number<std::uint64_t>(args, 3);
  l.region_fd = launch_number<int>(args, 4);
  l.region_bytes = launch_number<std::uint64_t>(args, 5);
  l.spares_fd = launch_number<int>(args, 6);
  l.spare_block_bytes = launch_number<std::uint64_t>(args, 7);
  l.spare_count = launch_number<std::uint64_t>(args, 8);
  l.digest = launch_number<std::uint64_t>(args, 9);
  return l;
}

}  // namespace seedloader
