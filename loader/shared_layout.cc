#include "loader/shared_layout.h"

#include <algorithm>
#include <limits>
#include <string>

#include "seedloader/dataset.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {
constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// a * b, or ConfigError when it overflows.
std::size_t checked_mul(std::size_t a, std::size_t b, const char* what) {
  if (b != 0 && a > std::numeric_limits<std::size_t>::max() / b) {
    throw ConfigError(std::string("loader: ") + what + " does not fit in memory");
  }
  return a * b;
}
}  // namespace

void write_error(SlotHeader& h, std::int64_t index, ErrorStage stage,
                 std::string_view message, std::string_view type) {
  h.error_index = index;
  h.error_stage = stage;
  h.error[message.copy(h.error, kErrorTextBytes - 1)] = '\0';
  if (type.size() >= kErrorTypeBytes) type = {};
  h.error_type[type.copy(h.error_type, type.size())] = '\0';
}

SlotGeometry::SlotGeometry(const SampleLayout& layout, std::uint64_t batch)
    : batch_size(batch), num_fields(layout.num_fields()) {
  std::size_t at = 0;
  indices = at;
  at = round_up(at + checked_mul(batch, 8, "the batch's index array"), kCacheLine);
  fingerprints = at;
  at = round_up(at + batch * 8, kCacheLine);
  stream_epochs = at;
  at = round_up(at + batch * 8, kCacheLine);
  lengths = at;
  at = round_up(at + checked_mul(batch * 8, num_fields, "the length table"), kCacheLine);
  for (const FieldSpec& f : layout.fields()) {
    field_offset.push_back(at);
    field_row_bytes.push_back(f.bytes());
    std::size_t field_bytes = checked_mul(f.bytes(), batch, "a batch slot");
    if (at > std::numeric_limits<std::size_t>::max() - field_bytes - kPage) {
      throw ConfigError("loader: a batch slot does not fit in memory");
    }
    at = round_up(at + field_bytes, kCacheLine);
  }
  bytes = round_up(at, kPage);
}

RegionLayout::RegionLayout(const SampleLayout& layout, std::uint64_t batch_size,
                           int workers, int prefetch, std::uint64_t read_ahead)
    : workers_(workers),
      prefetch_(prefetch),
      slot_(layout, batch_size),
      read_ahead_capacity_(std::min(read_ahead, Dataset::kMaxReadAhead)) {
  static_assert(sizeof(std::atomic<std::uint64_t>) == 8);
  workers_off_ = round_up(sizeof(ControlBlock), kCacheLine);
  headers_off_ = round_up(workers_off_ + workers * sizeof(WorkerBlock), kCacheLine);
  read_ahead_off_ = round_up(headers_off_ + num_slots() * sizeof(SlotHeader), kCacheLine);
  data_off_ = round_up(read_ahead_indices() + read_ahead_capacity_ * 8, kPage);
  std::size_t data = checked_mul(slot_.bytes, num_slots(), "the batch slots");
  if (data > std::numeric_limits<std::size_t>::max() - data_off_) {
    throw ConfigError("loader: the batch slots do not fit in memory");
  }
  total_ = data_off_ + data;
}

}  // namespace seedloader
