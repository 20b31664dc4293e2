#include "tools/seed_audit/fingerprint_table.h"

#include "tools/common/hash64.h"

namespace seedloader::audit {

namespace {
constexpr std::uint64_t kInitialSlots = 1 << 16;
}  // namespace

FingerprintTable::FingerprintTable()
    : slots_(kInitialSlots, Slot{0, 0, 0}), mask_(kInitialSlots - 1) {}

std::optional<FingerprintTable::FirstUse> FingerprintTable::find_or_insert(
    std::uint64_t fp, FirstUse use) {
  // Fingerprints given by callers need not be uniform (small integers), so mix.
  std::uint64_t i = tools::mix64(fp) & mask_;
  while (slots_[i].owner_plus_one != 0) {
    if (slots_[i].fp == fp)
      return FirstUse{slots_[i].owner_plus_one - 1, slots_[i].index};
    i = (i + 1) & mask_;
  }
  slots_[i] = Slot{fp, use.owner + 1, use.index};
  if (++size_ * 8 > slots_.size() * 7) grow();
  return std::nullopt;
}

void FingerprintTable::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.size() * 2, Slot{0, 0, 0});
  mask_ = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.owner_plus_one == 0) continue;
    std::uint64_t i = tools::mix64(s.fp) & mask_;
    while (slots_[i].owner_plus_one != 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

}  // namespace seedloader::audit
