// The seed audit of a recorded trace, for programs and bindings: the same
// detectors and the same JSON report as `seed-audit trace FILE --json -`.
// A trace is JSONL, one object per sample:
//   {"rank":0,"epoch":0,"worker":1,"batch":3,"index":17,"rng":"<state>"}
// with optional "content" and "aug" (see tools/seed_audit/trace_reader.h), and, for a
// mixture's sample, "source" and "source_epoch" (index then being the sample's in
// its source): such samples are checked within each source's epochs.
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace seedloader {

// The report as JSON text: {"verdict":"clean"|"findings","samples":N,"findings":[...]}.
// dataset_size, when given, checks that every epoch covers [0, N) except for
// allowed_missing samples. global_batch, when given, says each epoch's order was
// padded to a multiple of it (the elastic partition), not of the world size.
// source_sizes: a mixture's sources by name and size, to check that each source
// epoch but the last a trace holds covers the source. mixture_state: a mixture's
// state as JSON (state_dict()["mixture"]), to check each global step's sources
// against the weights of its history; needs global_batch.
// Throws DataError naming the file and line for an unreadable or malformed trace,
// or one that holds no samples.
std::string audit_trace_json(
    const std::string& path, std::optional<std::uint64_t> dataset_size,
    std::uint64_t allowed_missing = 0,
    std::optional<std::uint64_t> global_batch = std::nullopt,
    const std::map<std::string, std::uint64_t>& source_sizes = {},
    const std::string& mixture_state = "");

}  // namespace seedloader
