// Auditing a whole trace file: read it record by record into an Auditor.
// Shared by `seed-audit trace` and the public audit_trace_json(). Stateless.
#pragma once

#include <string>

#include "tools/seed_audit/audit_types.h"
#include "tools/seed_audit/auditor.h"

namespace seedloader::audit {

// Throws DataError for an unreadable or malformed trace, or one without samples.
Report audit_trace_file(const std::string& path, const AuditOptions& options);

}  // namespace seedloader::audit
