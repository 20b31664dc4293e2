#include "seedloader/batch.h"

#include <utility>

#include "loader/shared_layout.h"
#include "loader/slot_owner.h"

namespace seedloader {

std::size_t TensorView::bytes() const {
  std::size_t n = dtype_size(dtype);
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

Batch::Batch(std::shared_ptr<SlotOwner> owner, int slot, const SampleLayout* layout,
             const SlotGeometry* geometry, const std::byte* data, BatchInfo info)
    : owner_(std::move(owner)),
      slot_(slot),
      layout_(layout),
      geometry_(geometry),
      data_(data),
      info_(info) {}

Batch::Batch(Batch&& other) noexcept
    : owner_(std::move(other.owner_)),
      slot_(std::exchange(other.slot_, -1)),
      layout_(other.layout_),
      geometry_(other.geometry_),
      data_(other.data_),
      info_(other.info_) {}

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::move(other.owner_);
    slot_ = std::exchange(other.slot_, -1);
    layout_ = other.layout_;
    geometry_ = other.geometry_;
    data_ = other.data_;
    info_ = other.info_;
  }
  return *this;
}

void Batch::reset() noexcept {
  if (owner_) {
    owner_->release(slot_, data_);
    owner_.reset();
  }
  slot_ = -1;
}

std::span<const std::byte> Batch::slot_bytes() const {
  return empty() ? std::span<const std::byte>() : std::span(data_, geometry_->bytes);
}

std::span<const std::uint64_t> Batch::indices() const {
  if (empty()) return {};
  return {reinterpret_cast<const std::uint64_t*>(data_ + geometry_->indices),
          info_.count};
}

std::span<const std::uint64_t> Batch::fingerprints() const {
  if (empty()) return {};
  return {reinterpret_cast<const std::uint64_t*>(data_ + geometry_->fingerprints),
          info_.count};
}

std::span<const std::uint64_t> Batch::stream_epochs() const {
  if (empty()) return {};
  return {reinterpret_cast<const std::uint64_t*>(data_ + geometry_->stream_epochs),
          info_.count};
}

std::vector<std::uint64_t> Batch::lengths(std::size_t f) const {
  std::vector<std::uint64_t> out;
  if (empty()) return out;
  const auto* table = reinterpret_cast<const std::uint64_t*>(data_ + geometry_->lengths);
  out.reserve(info_.count);
  for (std::uint64_t i = 0; i < info_.count; ++i) {
    out.push_back(table[i * geometry_->num_fields + f]);
  }
  return out;
}

TensorView Batch::tensor(const std::string& name) const {
  if (empty()) throw ConfigError("tensor '" + name + "' requested from an empty Batch");
  return tensor(layout_->index_of(name));
}

TensorView Batch::tensor(std::size_t f) const {
  const FieldSpec& spec = layout_->field(f);
  TensorView t;
  t.name = spec.name;
  t.dtype = spec.dtype;
  t.shape.push_back(static_cast<std::int64_t>(info_.count));
  t.shape.insert(t.shape.end(), spec.shape.begin(), spec.shape.end());
  t.strides.assign(t.shape.size(), 0);
  std::int64_t stride = static_cast<std::int64_t>(dtype_size(spec.dtype));
  for (std::size_t d = t.shape.size(); d-- > 0;) {
    t.strides[d] = stride;
    stride *= t.shape[d];
  }
  t.data = data_ + geometry_->field_offset[f];
  return t;
}

}  // namespace seedloader
