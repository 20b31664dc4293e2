// StepTrace: --trace, the data of every trained step as seed-audit trace lines
// (tools/seed_audit/trace_reader.h), one JSON object per sample:
//   {"rank":1,"epoch":0,"worker":0,"batch":3,"index":17,"rng":"<16 hex>",
//    "content":"<16 hex>","step":9,"run":0}
// rng is the sample's stream fingerprint (Batch::fingerprints()); content is XXH64
// (seed 0) over the sample's bytes after transforms, field by field; batch is the
// batch's position in the epoch and step the global step it trained (1-based, as
// --steps counts). run is 0 for a fresh run and one more than the checkpoint's for a
// resumed one, so a file appended across resumes still tells the runs apart. Only
// worker depends on --workers; under --seeding sample and --partition elastic every
// other field of step s, read in rank order, is the same at any world size dividing
// G. Rank 0 gathers every rank's samples and appends them in rank order, so one file
// holds the whole run and lines never interleave.
// Declared skips (--skip-steps, --skip-samples) go in as the samples they leave
// out, {"rank","epoch","batch","index","step","run","skipped":true}, written by rank
// 0 alone from the ledger: seed-audit reports them as declared_skip, not as a gap.
// Over a mixture (--data mix:...), a sample's line also holds "source" and
// "source_epoch", and index is its index in that source, so seed-audit checks it
// within the source's epochs.
// Collective: every rank records every step. Not thread-safe.
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "seedloader/batch.h"
#include "seedloader/ddp/communicator.h"
#include "seedloader/ledger.h"
#include "seedloader/mixture_dataset.h"

namespace seedloader::train {

class StepTrace {
 public:
  // Rank 0 opens `path` for appending (Error naming it when it cannot). Batches hold
  // at most `max_batch` samples on any rank. REQUIRES: `comm` outlives the trace.
  // `mixture`: the data set when it is a mixture (it must outlive the trace), else
  // nullptr.
  StepTrace(const std::string& path, ddp::Communicator& comm, std::uint64_t max_batch,
            std::uint64_t run, const MixtureDataset* mixture = nullptr);
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

  // Records this rank's `batch`, batch number `number` of `epoch`, trained as global
  // step `step`. Collective; throws Error when rank 0 cannot append.
  void record(std::uint64_t epoch, std::uint64_t number, std::uint64_t step,
              const Batch& batch);
  // Rank 0 appends `entries` (declared skipped, of any rank) as skipped samples,
  // entry e of global step `first_step + e.step` (1-based). Local: other ranks
  // return at once. Throws Error when rank 0 cannot append.
  void record_skipped(std::span<const LedgerEntry> entries, std::uint64_t first_step);

 private:
  void flush();  // rank 0

  std::string path_;
  ddp::Communicator& comm_;
  std::uint64_t max_batch_, run_;
  const MixtureDataset* mixture_;
  std::ofstream out_;                // rank 0 only
  std::vector<std::int64_t> slots_;  // every rank's samples, for one all-reduce
};

// XXH64 over sample `i`'s bytes of every field (a variable field: its filled
// elements), in field order. REQUIRES: i < batch.size().
std::uint64_t sample_content_hash(const Batch& batch, std::uint64_t i);

}  // namespace seedloader::train
