// Auditor: streams per-sample records through the detectors and reports what they
// found. Memory grows with distinct random states (16 bytes each, see
// FingerprintTable) and with dataset indices per epoch (2 bytes each, see
// IndexDetector), never with the text of the trace.
// Not thread-safe; one owner feeds it, then calls report().
#pragma once

#include <cstdint>
#include <optional>

#include "tools/seed_audit/index_detector.h"
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
  std::uint64_t bytes() const { return states_.bytes() + indices_.bytes(); }

 private:
  OwnerTable owners_;
  StateDetector states_;
  IndexDetector indices_;
  OrderDetector orders_;
  std::uint64_t samples_ = 0;
};

}  // namespace seedloader::audit
