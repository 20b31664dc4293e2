#include "loader/batch_filler.h"

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "seedloader/derive.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {

// Under BadSample::kSkip, how many replacements in a row may fail before the
// batch fails: a wrong root or a dead disk must surface, not be skipped through
// millions of samples.
constexpr std::uint64_t kMaxReplacements = 64;

// One attempt at sample `index` into row i; throws what get() throws.
void read_sample(const FillContext& ctx, std::byte* slot, std::uint64_t i,
                 std::uint64_t index, Rng& rng, std::vector<std::byte*>& ptrs) {
  const SlotGeometry& g = *ctx.geometry;
  const SampleLayout& layout = ctx.dataset->layout();
  auto* fingerprints = reinterpret_cast<std::uint64_t*>(slot + g.fingerprints);
  auto* lengths = reinterpret_cast<std::uint64_t*>(slot + g.lengths) + i * g.num_fields;
  for (std::size_t f = 0; f < layout.num_fields(); ++f) {
    ptrs[f] = slot + g.field_offset[f] + i * g.field_row_bytes[f];
    lengths[f] = static_cast<std::uint64_t>(layout.field(f).elements());
  }
  fingerprints[i] = rng.fingerprint();
  SampleWriter writer(layout, ptrs, {lengths, layout.num_fields()}, index);
  try {
    ctx.dataset->get(index, rng, writer);
  } catch (const std::bad_alloc&) {
    // An input that asks for more memory than there is is bad input.
    throw DataError(ctx.dataset->describe() + ": sample " + std::to_string(index) +
                    ": out of memory reading it (std::bad_alloc)");
  }
}

}  // namespace

FillResult fill_batch(const FillContext& ctx, std::byte* slot, std::uint64_t epoch,
                      std::uint64_t batch, std::uint64_t count, Rng& worker_rng,
                      CancelWatch watch) {
  FillResult result;
  auto* indices = reinterpret_cast<std::uint64_t*>(slot + ctx.geometry->indices);
  const auto* stream_epochs =
      reinterpret_cast<const std::uint64_t*>(slot + ctx.geometry->stream_epochs);
  std::vector<std::byte*> ptrs(ctx.dataset->layout().num_fields());
  const std::uint64_t rows = count + (ctx.partner_row && count > 0 ? 1 : 0);
  for (std::uint64_t i = 0; i < rows; ++i) {
    if (watch.cancelled()) {
      result.outcome = FillResult::Outcome::kCancelled;
      return result;
    }
    const std::uint64_t original = indices[i];
    std::uint64_t index = original;
    // Replacements come from the sample's neighbours (its source, in a mixture),
    // asked once the sample has failed: `original` has been read, so it is valid.
    Dataset::Neighbours near;
    try {
      for (std::uint64_t attempt = 0;; ++attempt) {
        try {
          if (ctx.seeding == SeedScope::kSample) {
            Rng rng = ctx.dataset->sample_rng(ctx.base_seed, stream_epochs[i], original);
            read_sample(ctx, slot, i, index, rng, ptrs);
          } else {
            read_sample(ctx, slot, i, index, worker_rng, ptrs);
          }
          break;
        } catch (const DataError&) {
          if (attempt == 0 && ctx.on_bad_sample == BadSample::kSkip)
            near = ctx.dataset->replacements(original);
          if (ctx.on_bad_sample != BadSample::kSkip ||
              attempt + 1 >= std::min(near.count, kMaxReplacements + 1)) {
            throw;
          }
          if (watch.cancelled()) {
            result.outcome = FillResult::Outcome::kCancelled;
            return result;
          }
          if (i < count) ++result.skipped;  // the partner row is counted by its own batch
          index = near.first + (original - near.first + attempt + 1) % near.count;
        }
      }
      indices[i] = index;
    } catch (const std::exception& e) {
      result.outcome = FillResult::Outcome::kFailed;
      result.error_index = static_cast<std::int64_t>(index);
      result.message = e.what();
      if (const auto* raised = dynamic_cast<const DatasetException*>(&e)) {
        result.exception_type = raised->type();
        result.original = raised->original();
      }
      if (ctx.on_bad_sample == BadSample::kSkip && dynamic_cast<const DataError*>(&e)) {
        result.message += " (and so did the " +
                          std::to_string(std::min(near.count - 1, kMaxReplacements)) +
                          " samples after it that would have replaced it)";
      }
      return result;
    } catch (...) {
      result.outcome = FillResult::Outcome::kFailed;
      result.error_index = static_cast<std::int64_t>(index);
      result.message = "unknown exception from get()";
      return result;
    }
  }
  if (ctx.mixer != nullptr && count > 0) {
    try {
      ctx.mixer->apply(slot, *ctx.geometry, ctx.base_seed, epoch, ctx.rank, batch, count,
                       ctx.partner_row);
    } catch (const std::exception& e) {
      result.outcome = FillResult::Outcome::kFailed;
      result.message = std::string("batch mix: ") + e.what();
    }
  }
  return result;
}

}  // namespace seedloader
