// FingerprintTable: which sample first used each random state. An open-addressing
// (linear probing) hash table from a 64-bit state fingerprint to the first user's
// owner id (a (rank, epoch, worker) triple, see OwnerTable) and sample index:
// 16 bytes a state, at most 8/7 of that again in empty slots before it doubles.
// Not thread-safe; one owner.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace seedloader::audit {

class FingerprintTable {
 public:
  struct FirstUse {
    std::uint32_t owner;
    std::uint32_t index;
  };

  FingerprintTable();
  FingerprintTable(const FingerprintTable&) = delete;
  FingerprintTable& operator=(const FingerprintTable&) = delete;

  // The first use of `fp` if it was seen before; otherwise records `use` as its
  // first use and returns nothing. REQUIRES: use.owner < UINT32_MAX.
  std::optional<FirstUse> find_or_insert(std::uint64_t fp, FirstUse use);

  std::uint64_t size() const { return size_; }
  std::uint64_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    std::uint64_t fp;
    std::uint32_t owner_plus_one;  // 0 marks an empty slot
    std::uint32_t index;
  };
  void grow();

  std::vector<Slot> slots_;
  std::uint64_t mask_ = 0;
  std::uint64_t size_ = 0;
};

}  // namespace seedloader::audit
