#include "tools/seed_audit/report_output.h"

#include <fstream>
#include <iostream>

#include "seedloader/error.h"
#include "tools/seed_audit/commands.h"
#include "tools/seed_audit/report_format.h"

namespace seedloader::audit {

int emit_report(const Report& report, const std::string& json_path) {
  const bool json_to_stdout = json_path == "-";
  (json_to_stdout ? std::cerr : std::cout) << report_text(report) << std::flush;
  if (json_to_stdout) {
    std::cout << report_json(report).dump(2) << "\n" << std::flush;
  } else if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << report_json(report).dump(2) << "\n";
    out.close();
    if (!out) throw DataError("cannot write the JSON report to " + json_path);
  }
  return report.clean() ? kExitOk : kExitFinding;
}

void add_json_report_option(CLI::App& cmd, std::string& json_path) {
  cmd.add_option("--json", json_path,
                 "Write the JSON report to this file; '-' writes it to stdout and the "
                 "text report to stderr");
}

}  // namespace seedloader::audit
