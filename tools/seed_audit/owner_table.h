// OwnerTable: a dense id for each (run, rank, epoch, worker) seen in a trace, so
// the per-state table can name a sample's owner in 4 bytes, plus what the order
// detector keeps per owner. Lines usually come in runs from one owner, so the last
// lookup is cached. Not thread-safe; one owner.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

struct Owner {
  std::uint32_t run;
  std::uint32_t rank;
  std::uint32_t epoch;
  std::uint32_t worker;
  // Order bookkeeping: how often this owner saw an index below its previous one.
  std::uint64_t last_index = 0;
  bool has_last = false;
  std::uint64_t decreases = 0;
};

class OwnerTable {
 public:
  OwnerTable() = default;
  OwnerTable(const OwnerTable&) = delete;
  OwnerTable& operator=(const OwnerTable&) = delete;

  // The id of r's (run, rank, epoch, worker), creating it on first sight.
  std::uint32_t id(const SampleRecord& r) {
    if (last_ != kNone && owners_[last_].run == r.run && owners_[last_].rank == r.rank &&
        owners_[last_].epoch == r.epoch && owners_[last_].worker == r.worker) {
      return last_;
    }
    Key key{r.run, r.rank, r.epoch, r.worker};
    auto [it, inserted] =
        ids_.try_emplace(key, static_cast<std::uint32_t>(owners_.size()));
    if (inserted) owners_.push_back(Owner{r.run, r.rank, r.epoch, r.worker});
    last_ = it->second;
    return last_;
  }

  Owner& operator[](std::uint32_t id) { return owners_[id]; }
  const Owner& operator[](std::uint32_t id) const { return owners_[id]; }
  const std::vector<Owner>& all() const { return owners_; }

 private:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  struct Key {
    std::uint32_t run, rank, epoch, worker;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return (std::uint64_t{k.rank} << 48) ^ (std::uint64_t{k.epoch} << 20) ^ k.worker ^
             (std::uint64_t{k.worker} << 40) ^ (std::uint64_t{k.run} << 32);
    }
  };

  std::unordered_map<Key, std::uint32_t, KeyHash> ids_;
  std::vector<Owner> owners_;
  std::uint32_t last_ = kNone;
};

}  // namespace seedloader::audit
