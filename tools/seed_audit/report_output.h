// Shared by the auditing subcommands: print the text report and write the JSON
// report where --json asked, then map the verdict to the exit code.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

// Text to stdout (to stderr when the JSON goes to stdout, `json_path` "-"), JSON
// to `json_path` when it is not empty. Returns kExitOk when clean, kExitFinding
// otherwise. Throws DataError when the JSON file cannot be written.
int emit_report(const Report& report, const std::string& json_path);

// Adds the --json REPORT option that emit_report's `json_path` comes from.
void add_json_report_option(CLI::App& cmd, std::string& json_path);

}  // namespace seedloader::audit
