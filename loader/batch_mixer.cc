#include "loader/batch_mixer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/half.h"
#include "seedloader/random.h"

namespace seedloader {

namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw ConfigError("batch mix: " + why);
}

SampleLayout with_target(const BatchMix& mix, const SampleLayout& dataset_layout) {
  std::vector<FieldSpec> fields = dataset_layout.fields();
  for (const FieldSpec& f : fields) {
    if (f.name == mix.target_field) {
      refuse("the dataset already has a field '" + mix.target_field +
             "'; choose another target_field");
    }
  }
  fields.push_back(FieldSpec{mix.target_field, DType::kF32, {mix.num_classes}, false});
  return SampleLayout(std::move(fields));
}

// One row of an image field, as torch computes lam * x + (1 - lam) * y in place
// in x's dtype: each product rounded to the dtype, then the sum.
template <typename T>
T to_dtype(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, Float16>) {
    return to_float16(v);
  } else {
    return to_bfloat16(v);
  }
}

template <typename T>
float from_dtype(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return to_float(v);
  }
}

template <typename T>
void blend_row(std::byte* row, const std::byte* other, std::size_t n, float lam,
               float rest) {
  auto* x = reinterpret_cast<T*>(row);
  const auto* y = reinterpret_cast<const T*>(other);
  for (std::size_t k = 0; k < n; ++k) {
    const float kept = from_dtype(to_dtype<T>(from_dtype(x[k]) * lam));
    const float taken = from_dtype(to_dtype<T>(from_dtype(y[k]) * rest));
    x[k] = to_dtype<T>(taken + kept);
  }
}

std::int64_t read_label(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return static_cast<std::int64_t>(*reinterpret_cast<const std::uint8_t*>(p));
    case DType::kI32: {
      std::int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    default: {
      std::int64_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
  }
}

struct Box {
  std::int64_t x1, y1, x2, y2;
};

}  // namespace

BatchMixer::BatchMixer(BatchMix mix, const SampleLayout& dataset_layout)
    : mix_(std::move(mix)) {
  if (mix_.num_classes < 1) {
    refuse("num_classes must be at least 1 (got " + std::to_string(mix_.num_classes) +
           ")");
  }
  image_ = dataset_layout.index_of(mix_.image_field);
  label_ = dataset_layout.index_of(mix_.label_field);
  const FieldSpec& image = dataset_layout.field(image_);
  const FieldSpec& label = dataset_layout.field(label_);
  if (image.variable || label.variable) {
    refuse("the image and label fields must have a fixed size");
  }
  if (image.shape.size() != 2 && image.shape.size() != 3) {
    refuse("the image field '" + image.name + "' must be CHW or HW, not " +
           std::to_string(image.shape.size()) + "-dimensional");
  }
  height_ = image.shape[image.shape.size() - 2];
  width_ = image.shape[image.shape.size() - 1];
  const bool floating = image.dtype == DType::kF32 || image.dtype == DType::kF16 ||
                        image.dtype == DType::kBF16;
  if (!floating && image.dtype != DType::kU8) {
    refuse("the image field '" + image.name + "' is " + dtype_name(image.dtype) +
           "; mixing takes float32, float16, bfloat16 or (CutMix only) uint8");
  }
  if (!floating && mix_.mixup_alpha > 0.0) {
    refuse("MixUp needs a floating image field, and '" + image.name +
           "' is uint8 (use a totensor or normalize output, or CutMix alone)");
  }
  const bool integer = label.dtype == DType::kI64 || label.dtype == DType::kI32 ||
                       label.dtype == DType::kU8;
  if (!label.shape.empty() || !integer) {
    refuse("the label field '" + label.name +
           "' must be an integer scalar (uint8, int32 or int64)");
  }
  layout_ = with_target(mix_, dataset_layout);
}

void BatchMixer::apply(std::byte* slot, const SlotGeometry& g, std::uint64_t base_seed,
                       std::uint64_t epoch, std::uint64_t rank, std::uint64_t batch,
                       std::uint64_t count, bool partner_row) const {
  if (count == 0) return;
  const FieldSpec& image = layout_.field(image_);
  const FieldSpec& label = layout_.field(label_);
  const std::size_t target = layout_.num_fields() - 1;
  const auto* indices = reinterpret_cast<const std::uint64_t*>(slot + g.indices);

  // Labels first: a bad one fails the batch before anything is changed.
  const std::uint64_t rows = count + (partner_row ? 1 : 0);
  std::vector<std::int64_t> labels(rows);
  for (std::uint64_t i = 0; i < rows; ++i) {
    labels[i] = read_label(slot + g.field_offset[label_] + i * g.field_row_bytes[label_],
                           label.dtype);
    if (labels[i] < 0 || labels[i] >= mix_.num_classes) {
      throw DataError("sample " + std::to_string(indices[i]) + ": label " +
                      std::to_string(labels[i]) + " is outside [0, " +
                      std::to_string(mix_.num_classes) +
                      ") (the batch mix's num_classes)");
    }
  }

  Rng rng = batch_stream(base_seed, epoch, rank, batch);
  const bool both = mix_.mixup_alpha > 0.0 && mix_.cutmix_alpha > 0.0;
  const bool cutmix = both ? bernoulli(rng, mix_.cutmix_prob) : mix_.cutmix_alpha > 0.0;
  double lam = beta(rng, cutmix ? mix_.cutmix_alpha : mix_.mixup_alpha,
                    cutmix ? mix_.cutmix_alpha : mix_.mixup_alpha);

  std::byte* images = slot + g.field_offset[image_];
  const std::size_t row_bytes = g.field_row_bytes[image_];
  // Rows are rewritten from the last down, so row i-1 is still unmixed when row
  // i takes from it; the last row's original (or the partner row) serves row 0.
  std::vector<std::byte> last;
  if (!partner_row)
    last.assign(images + (count - 1) * row_bytes, images + count * row_bytes);
  const std::byte* first_source = partner_row ? images + count * row_bytes : last.data();
  auto source = [&](std::uint64_t i) -> const std::byte* {
    return i == 0 ? first_source : images + (i - 1) * row_bytes;
  };

  if (cutmix) {
    const auto cx = static_cast<std::int64_t>(bounded(rng, width_));
    const auto cy = static_cast<std::int64_t>(bounded(rng, height_));
    const double r = 0.5 * std::sqrt(1.0 - lam);
    const auto half_w = static_cast<std::int64_t>(r * static_cast<double>(width_));
    const auto half_h = static_cast<std::int64_t>(r * static_cast<double>(height_));
    const Box box{std::max<std::int64_t>(cx - half_w, 0),
                  std::max<std::int64_t>(cy - half_h, 0), std::min(cx + half_w, width_),
                  std::min(cy + half_h, height_)};
    const std::int64_t channels = image.shape.size() == 3 ? image.shape[0] : 1;
    const std::size_t elem = dtype_size(image.dtype);
    const auto span = static_cast<std::size_t>(box.x2 - box.x1) * elem;
    for (std::uint64_t i = count; i-- > 0;) {
      std::byte* row = images + i * row_bytes;
      const std::byte* from = source(i);
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t y = box.y1; y < box.y2; ++y) {
          const auto at =
              static_cast<std::size_t>((c * height_ + y) * width_ + box.x1) * elem;
          std::memmove(row + at, from + at, span);
        }
      }
    }
    lam = 1.0 - static_cast<double>((box.x2 - box.x1) * (box.y2 - box.y1)) /
                    static_cast<double>(width_ * height_);
  } else {
    const std::size_t n = static_cast<std::size_t>(image.elements());
    const auto keep = static_cast<float>(lam);
    const auto take = static_cast<float>(1.0 - lam);
    for (std::uint64_t i = count; i-- > 0;) {
      std::byte* row = images + i * row_bytes;
      switch (image.dtype) {
        case DType::kF16:
          blend_row<Float16>(row, source(i), n, keep, take);
          break;
        case DType::kBF16:
          blend_row<BFloat16>(row, source(i), n, keep, take);
          break;
        default:
          blend_row<float>(row, source(i), n, keep, take);
          break;
      }
    }
  }

  // target[i] = lam * one_hot(label[i]) + (1 - lam) * one_hot(label[i-1]), in
  // float32 as torch rounds it.
  const auto keep = static_cast<float>(lam);
  const auto take = static_cast<float>(1.0 - lam);
  auto* lengths = reinterpret_cast<std::uint64_t*>(slot + g.lengths);
  for (std::uint64_t i = 0; i < count; ++i) {
    auto* row = reinterpret_cast<float*>(slot + g.field_offset[target] +
                                         i * g.field_row_bytes[target]);
    std::fill(row, row + mix_.num_classes, 0.0f);
    const std::int64_t previous = labels[i == 0 ? rows - 1 : i - 1];
    row[previous] += take;
    row[labels[i]] += keep;
    lengths[i * g.num_fields + target] = static_cast<std::uint64_t>(mix_.num_classes);
  }
}

}  // namespace seedloader
