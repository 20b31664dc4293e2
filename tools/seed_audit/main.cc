// seed-audit: inspect and audit seedloader's random streams and shards.
#include <cstdio>
#include <exception>

#include "seedloader/error.h"
#include "tools/common/error_text.h"
#include "tools/seed_audit/commands.h"

int main(int argc, char** argv) {
  using namespace seedloader::audit;
  CLI::App app{
      "seed-audit: derive seedloader's random streams, show each rank's shard, and\n"
      "find duplicate random streams or batches."};
  seedloader::tools::redact_parse_errors(app);
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  Action action;
  add_derive_command(app, action);
  add_shard_command(app, action);
  add_trace_command(app, action);
  add_run_command(app, action);
  add_order_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }
  try {
    return action();
  } catch (const seedloader::ConfigError& e) {
    std::fprintf(stderr, "seed-audit: %s\n", seedloader::tools::error_text(e).c_str());
    return kExitUsage;
  } catch (const seedloader::DataError& e) {
    std::fprintf(stderr, "seed-audit: %s\n", seedloader::tools::error_text(e).c_str());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seed-audit: error: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return kExitUsage;
  }
}
