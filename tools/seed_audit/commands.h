// seed-audit subcommands. Each add_* registers its CLI11 subcommand on the app and
// returns the state its callback fills; run happens after parsing, in main.
// Exit codes: 0 ok, 1 finding, 2 usage or input error.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace seedloader::audit {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFinding = 1;
inline constexpr int kExitUsage = 2;

// A subcommand's body: runs after a successful parse and returns the exit code.
using Action = std::function<int()>;

void add_derive_command(CLI::App& app, Action& action);
void add_shard_command(CLI::App& app, Action& action);
void add_trace_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_order_command(CLI::App& app, Action& action);

}  // namespace seedloader::audit
