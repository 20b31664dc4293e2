#include "tools/ddp_train/step_trace.h"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "seedloader/error.h"

namespace seedloader::train {
namespace {

// Per rank: count, worker, then (index, rng, content, stream epoch) per sample.
constexpr std::uint64_t kHeader = 2, kPerSample = 4;

std::string hex16(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The all-reduce carries uint64 values in int64 slots: only one rank writes each
// slot and the others add 0, so the sum is the bit pattern sent.
std::int64_t as_slot(std::uint64_t v) { return static_cast<std::int64_t>(v); }
std::uint64_t from_slot(std::int64_t v) { return static_cast<std::uint64_t>(v); }

}  // namespace

std::uint64_t sample_content_hash(const Batch& batch, std::uint64_t i) {
  XXH64_state_t* h = XXH64_createState();
  XXH64_reset(h, 0);
  for (std::size_t f = 0; f < batch.num_fields(); ++f) {
    const TensorView t = batch.tensor(f);
    const std::uint64_t elements = batch.lengths(f)[i];
    const std::byte* row = t.data + static_cast<std::int64_t>(i) * t.strides[0];
    XXH64_update(h, row, elements * dtype_size(t.dtype));
  }
  const std::uint64_t v = XXH64_digest(h);
  XXH64_freeState(h);
  return v;
}

StepTrace::StepTrace(const std::string& path, ddp::Communicator& comm,
                     std::uint64_t max_batch, std::uint64_t run,
                     const MixtureDataset* mixture)
    : path_(path), comm_(comm), max_batch_(max_batch), run_(run), mixture_(mixture) {
  slots_.resize(static_cast<std::size_t>(comm.size()) *
                (kHeader + kPerSample * max_batch));
  if (comm.rank() != 0) return;
  out_.open(path, std::ios::app);
  if (!out_) throw Error("--trace " + path + ": cannot open: " + std::strerror(errno));
}

void StepTrace::record(std::uint64_t epoch, std::uint64_t number, std::uint64_t step,
                       const Batch& batch) {
  const std::uint64_t per_rank = kHeader + kPerSample * max_batch_;
  std::fill(slots_.begin(), slots_.end(), 0);
  std::int64_t* mine = slots_.data() + static_cast<std::size_t>(comm_.rank()) * per_rank;
  const std::uint64_t n = std::min<std::uint64_t>(batch.size(), max_batch_);
  mine[0] = as_slot(n);
  mine[1] = batch.worker();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::int64_t* s = mine + kHeader + kPerSample * i;
    s[0] = as_slot(batch.indices()[i]);
    s[1] = as_slot(batch.fingerprints()[i]);
    s[2] = as_slot(sample_content_hash(batch, i));
    s[3] = as_slot(batch.stream_epochs()[i]);
  }
  comm_.allreduce(std::span<std::int64_t>(slots_), ddp::IntReduceOp::kSum);
  if (comm_.rank() != 0) return;
  for (int r = 0; r < comm_.size(); ++r) {
    const std::int64_t* theirs = slots_.data() + static_cast<std::size_t>(r) * per_rank;
    for (std::uint64_t i = 0; i < from_slot(theirs[0]); ++i) {
      const std::int64_t* s = theirs + kHeader + kPerSample * i;
      nlohmann::json j{{"rank", r},
                       {"epoch", epoch},
                       {"worker", theirs[1]},
                       {"batch", number},
                       {"index", from_slot(s[0])},
                       {"rng", hex16(from_slot(s[1]))},
                       {"content", hex16(from_slot(s[2]))},
                       {"step", step},
                       {"run", run_}};
      if (mixture_ != nullptr) {
        const auto [source, local] = mixture_->locate(from_slot(s[0]));
        j["source"] = mixture_->sources()[source].name;
        j["source_epoch"] = from_slot(s[3]);
        j["index"] = local;
      }
      out_ << j.dump() << "\n";
    }
  }
  flush();
}

void StepTrace::record_skipped(std::span<const LedgerEntry> entries,
                               std::uint64_t first_step) {
  if (comm_.rank() != 0 || entries.empty()) return;
  for (const LedgerEntry& e : entries) {
    nlohmann::json j{{"rank", e.rank},
                     {"epoch", e.epoch},
                     {"batch", e.step},
                     {"index", e.index},
                     {"step", first_step + e.step},
                     {"run", run_},
                     {"skipped", true}};
    if (mixture_ != nullptr) {  // named as the trained samples of a mixture are
      j["source"] = mixture_->sources()[e.source].name;
      j["source_epoch"] = e.stream_epoch;
      j["index"] = e.source_index;
    }
    out_ << j.dump() << "\n";
  }
  flush();
}

void StepTrace::flush() {
  out_.flush();
  if (!out_) throw Error("--trace " + path_ + ": cannot append: " + std::strerror(errno));
}

}  // namespace seedloader::train
