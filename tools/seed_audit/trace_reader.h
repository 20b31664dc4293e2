// Reading traces: one JSON object per line, one line per sample:
//   {"rank":0,"epoch":0,"worker":1,"batch":3,"index":17,"rng":"<fingerprint>"}
// plus optional "content" (string or integer: a hash of the produced sample),
// "aug" (any JSON value: the drawn parameters) and "run" (which run of a job that
// restarted produced the sample: 0, 1, ...; absent: run 0). "skipped": true marks a
// sample the run declared skipped and did not train (worker and rng may then be
// absent; batch is the step it would have been in). Unknown keys are ignored;
// blank lines are skipped; anything else malformed is an error naming the line. `rng` and
// `content` strings are reduced to 64-bit hashes. A hand-written parser for this flat
// shape, since traces run to 10^7 lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

// The longest line read_trace accepts: a sample's record is a few hundred bytes,
// so a longer line is a malformed file, refused before it is buffered whole.
inline constexpr std::size_t kMaxTraceLineBytes = 4u << 20;

// Parses one line. Throws DataError describing the problem (without a line number).
// The returned record's `aug` points into `line`.
SampleRecord parse_trace_line(std::string_view line);

// Reads `path` line by line and hands every record to `sink`. Returns the number of
// records. Throws DataError "PATH:LINE: problem" for a malformed line, one longer
// than kMaxTraceLineBytes, or one the sink rejects, and DataError for a file that
// cannot be read. Memory stays within a read buffer and one line.
std::uint64_t read_trace(const std::string& path,
                         const std::function<void(const SampleRecord&)>& sink);

}  // namespace seedloader::audit
