// Files the tools read whole because a flag names them: --skip-samples FILE,
// mix:FILE, --mixture FILE. Each is read here, and only here, so that each is
// refused alike when it cannot be what the flag means: a directory (which a
// stream would read as empty), a device, FIFO or socket (/dev/zero is endless, a
// FIFO may never end), or a file larger than the flag's bound (read whole, it
// would take the machine's memory). Stateless.
#pragma once

#include <cstdint>
#include <string>

namespace seedloader::tools {

// The bound on a --skip-samples list: about 25 million indices.
inline constexpr std::uint64_t kMaxSampleListBytes = std::uint64_t{256} << 20;
// The bound on a JSON file (a mix: spec, a mixture state).
inline constexpr std::uint64_t kMaxJsonFileBytes = std::uint64_t{64} << 20;

// The bytes of the regular file `path`, at most `limit` of them. Throws ConfigError
// starting with `where` (the flag and its value, e.g. "--skip-samples ids.txt"):
// a path that cannot be opened or read (with the system's reason), a directory, a
// file that is not regular, or one larger than `limit` bytes (naming the bound).
std::string read_input_file(const std::string& where, const std::string& path,
                            std::uint64_t limit);

}  // namespace seedloader::tools
