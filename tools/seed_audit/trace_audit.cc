#include "tools/seed_audit/trace_audit.h"

#include "seedloader/audit.h"
#include "seedloader/error.h"
#include "tools/seed_audit/report_format.h"
#include "tools/seed_audit/trace_reader.h"

namespace seedloader {
namespace audit {

Report audit_trace_file(const std::string& path, const AuditOptions& options) {
  Auditor auditor(options);
  std::uint64_t n = read_trace(path, [&](const SampleRecord& r) { auditor.add(r); });
  if (n == 0) throw DataError("trace " + path + " holds no samples");
  if (auditor.samples() == 0)
    throw DataError("trace " + path + " holds no trained samples, only declared skips");
  return auditor.report();
}

}  // namespace audit

std::string audit_trace_json(const std::string& path,
                             std::optional<std::uint64_t> dataset_size,
                             std::uint64_t allowed_missing,
                             std::optional<std::uint64_t> global_batch,
                             const std::map<std::string, std::uint64_t>& source_sizes,
                             const std::string& mixture_state) {
  if (global_batch && *global_batch == 0)
    throw ConfigError("audit of " + path + ": global_batch must be at least 1");
  audit::AuditOptions options{dataset_size, allowed_missing, global_batch, {}};
  for (const auto& [name, size] : source_sizes) {
    if (size == 0)
      throw ConfigError("audit of " + path + ": source '" + name + "' is empty");
    options.source_sizes.emplace(name, size);
  }
  if (!mixture_state.empty()) {
    if (!global_batch)
      throw ConfigError("audit of " + path + ": a mixture state needs the global batch");
    options.mixture =
        audit::mixture_expectation("audit of " + path, mixture_state, *global_batch);
    options.pad_multiple.reset();  // a mixture's steps are whole: nothing is padded
  }
  return audit::report_json(audit::audit_trace_file(path, options)).dump();
}

}  // namespace seedloader
