#include "tools/seed_audit/seeding_dataset.h"

#include <bit>
#include <vector>

namespace seedloader::audit {
namespace {

SampleLayout with_fingerprint(const SampleLayout& inner) {
  std::vector<FieldSpec> fields = inner.fields();
  fields.push_back(FieldSpec{"__rng", DType::kI64, {}, false});
  fields.push_back(FieldSpec{"__rng_used", DType::kU8, {}, false});
  return SampleLayout(std::move(fields));
}

}  // namespace

SeedingDataset::SeedingDataset(const Dataset& inner, SeedingMode mode,
                               std::uint64_t base_seed)
    : inner_(inner),
      mode_(mode),
      base_seed_(base_seed),
      layout_(with_fingerprint(inner.layout())),
      own_(seeded_worker_rng(SeedingMode::kNaive, base_seed, 0, 0, 0)) {}

void SeedingDataset::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const bool owned = mode_ == SeedingMode::kTorch || mode_ == SeedingMode::kNaive;
  Rng& use = owned ? own_ : rng;
  const std::uint64_t before = use.fingerprint();
  inner_.get(index, use, out);
  out.field<std::int64_t>(fingerprint_field())[0] = std::bit_cast<std::int64_t>(before);
  out.field<std::uint8_t>(fingerprint_field() + 1)[0] = use.fingerprint() != before;
}

std::string SeedingDataset::describe() const {
  return inner_.describe() + " seeded " + seeding_mode_name(mode_);
}

SeedScope SeedingDataset::loader_scope() const {
  return mode_ == SeedingMode::kSample ? SeedScope::kSample : SeedScope::kWorker;
}

void SeedingDataset::on_worker_start(int worker) {
  if (mode_ != SeedingMode::kTorch) return;
  own_ = seeded_worker_rng(SeedingMode::kTorch, base_seed_, epoch_, 0,
                           static_cast<std::uint64_t>(worker));
}

}  // namespace seedloader::audit
