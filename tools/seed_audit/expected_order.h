// trace --expect: a recorded trace against the order a configuration implies
// (seedloader/ledger.h). Each (run, epoch, rank, batch) of the trace must hold the
// configuration's samples of that step, in order; the first one that does not is
// explained where it can be: an index past the data set (it grew), another step of
// the same rank (a resume point off by that many steps), the step under another
// world size (changed without the elastic partition), another epoch (set_epoch).
#pragma once

#include <string>

#include "seedloader/ledger.h"
#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

// The kOrderMismatch finding of trace `path` against `config` (its epoch, steps
// and filters are ignored), or nullopt when every step matches: its trained
// samples, and the samples it declares skipped ("skipped": true), which must be the
// ones the configuration's --skip-steps leave out. `checked` counts the samples
// compared. Throws DataError for an unreadable trace, ConfigError for
// an invalid configuration.
std::optional<Finding> check_expected_order(const std::string& path,
                                            const LedgerQuery& config,
                                            std::uint64_t& checked);

}  // namespace seedloader::audit
