// Auditor: streams per-sample records through the detectors and reports what they
// found. A mixture's samples (SampleRecord::source set) are checked for repeats and
// gaps within each source's own epochs, by a detector per source, instead of
// within the loader's epochs (where a small source cycles by design); their
// streams and orders go through the same detectors as any sample's. Memory grows with
// distinct random states (16 bytes each, see FingerprintTable) and with dataset indices
// per epoch (2 bytes each, see IndexDetector), never with the text of the trace. Not
// thread-safe; one owner feeds it, then calls report().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "tools/seed_audit/content_detector.h"
#include "tools/seed_audit/index_detector.h"
#include "tools/seed_audit/mixture_composition.h"
#include "tools/seed_audit/order_detector.h"
#include "tools/seed_audit/owner_table.h"
#include "tools/seed_audit/state_detector.h"

namespace seedloader::audit {

struct AuditOptions {
  // Check every epoch against [0, dataset_size) (the coverage finding).
  std::optional<std::uint64_t> dataset_size;
  // Samples an epoch may leave out by design (drop_last), for coverage.
  std::uint64_t allowed_missing = 0;
  // Each epoch's order is padded to a multiple of this (the elastic partition:
  // its global batch); unset: of the ranks each run shows (DistributedSampler).
  std::optional<std::uint64_t> pad_multiple;
  // A mixture's sources by name and size, for the coverage of their epochs;
  // a source not named is checked for repeats only.
  std::map<std::string, std::uint64_t, std::less<>> source_sizes;
  // A mixture's schedule, to check each global step's sources against its weights
  // (mixture_composition.h).
  std::optional<MixtureExpectation> mixture;
};

class Auditor {
 public:
  explicit Auditor(AuditOptions options = {});
  Auditor(const Auditor&) = delete;
  Auditor& operator=(const Auditor&) = delete;

  // Throws DataError naming the sample when a field exceeds the limits in
  // audit_types.h or the index is not below the dataset size.
  void add(const SampleRecord& r);

  // The findings so far, in FindingKind order.
  Report report() const;

  // Trained samples added (declared skips are not counted).
  std::uint64_t samples() const { return samples_; }
  // Bytes held by the per-state and per-index tables.
  std::uint64_t bytes() const;

 private:
  IndexDetector& source_detector(const std::string& name);

  OwnerTable owners_;
  StateDetector states_;
  IndexDetector indices_;
  ContentDetector contents_;
  // Per mixture source, by name.
  std::map<std::string, std::unique_ptr<IndexDetector>, std::less<>> sources_;
  AuditOptions options_;
  std::optional<CompositionDetector> composition_;
  OrderDetector orders_;
  std::uint64_t samples_ = 0;
};

}  // namespace seedloader::audit
