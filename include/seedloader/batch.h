// Batch: a zero-copy view of one delivered batch, living in its shared-memory
// slot. It gives each field as a TensorView ([count, ...shape], dtype, byte
// strides, data pointer), the sample indices actually delivered, and one stream
// fingerprint per sample. Destroying (or moving from and destroying) a Batch
// hands the slot back to the loader, which refills it; the loader's slots are
// kept alive for as long as any Batch refers to them. Move-only; use it from
// the thread that iterates the loader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seedloader/error.h"
#include "seedloader/sample_layout.h"

namespace seedloader {

struct TensorView {
  std::string name;
  DType dtype = DType::kU8;
  std::vector<std::int64_t> shape;    // [count, ...field shape]
  std::vector<std::int64_t> strides;  // in bytes, row-major
  const std::byte* data = nullptr;

  std::size_t bytes() const;
  // The elements as T; throws ConfigError if T is not the dtype.
  template <typename T>
  std::span<const T> values() const {
    if (dtype_of<T>() != dtype) {
      throw ConfigError("tensor '" + name + "' is " + dtype_name(dtype) + ", read as " +
                        dtype_name(dtype_of<T>()));
    }
    return {reinterpret_cast<const T*>(data), bytes() / sizeof(T)};
  }
};

class Engine;         // the loader's engine: the only maker of non-empty Batches
class SlotOwner;      // gets slots back from batches
struct SlotGeometry;  // where each part of a slot lies

struct BatchInfo {
  std::uint64_t number = 0;  // k: the batch's position in the epoch
  std::uint64_t epoch = 0;
  std::uint64_t count = 0;  // samples
  int worker = 0;           // who filled it (0 when num_workers is 0)
};

class Batch {
 public:
  Batch() = default;
  ~Batch() { reset(); }
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // Hands the slot back now; the Batch is empty afterwards.
  void reset() noexcept;
  bool empty() const { return owner_ == nullptr; }

  std::uint64_t number() const { return info_.number; }
  std::uint64_t epoch() const { return info_.epoch; }
  std::uint64_t size() const { return info_.count; }
  int worker() const { return info_.worker; }
  // The slot index within the loader's shared region.
  int slot() const { return slot_; }
  // The whole slot (indices, fingerprints, lengths, then the fields), e.g. for
  // one device copy; tensor(f).data - slot_bytes().data() is field f's offset.
  std::span<const std::byte> slot_bytes() const;

  std::span<const std::uint64_t> indices() const;
  std::span<const std::uint64_t> fingerprints() const;
  // The epoch each sample's stream is keyed by: the batch's epoch, or for a
  // mixture (mixture_dataset.h) the sample's source epoch.
  std::span<const std::uint64_t> stream_epochs() const;
  // Elements each sample filled in field f (the full size unless variable).
  // Entry i is sample i's count.
  std::vector<std::uint64_t> lengths(std::size_t f) const;

  // Throws ConfigError naming the field when there is none by that name.
  TensorView tensor(const std::string& name) const;
  // REQUIRES: f < number of fields.
  TensorView tensor(std::size_t f) const;
  std::size_t num_fields() const { return layout_ ? layout_->num_fields() : 0; }

 private:
  friend class Engine;
  Batch(std::shared_ptr<SlotOwner> owner, int slot, const SampleLayout* layout,
        const SlotGeometry* geometry, const std::byte* data, BatchInfo info);

  std::shared_ptr<SlotOwner> owner_;
  int slot_ = -1;
  const SampleLayout* layout_ = nullptr;
  const SlotGeometry* geometry_ = nullptr;
  const std::byte* data_ = nullptr;
  BatchInfo info_;
};

}  // namespace seedloader
