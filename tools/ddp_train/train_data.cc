#include "tools/ddp_train/train_data.h"

#include "loader/datasets/tensor_file.h"
#include "rng/error.h"
#include "tools/seed_audit/data_spec.h"

namespace seedloader::train {
namespace {

template <typename From>
void to_float(const TensorView& t, std::vector<float>& out) {
  auto v = t.values<From>();
  out.assign(v.begin(), v.end());
}

std::vector<float> floats_of(const TensorView& t) {
  std::vector<float> out;
  switch (t.dtype) {
    case DType::kU8:
      to_float<std::uint8_t>(t, out);
      break;
    case DType::kI32:
      to_float<std::int32_t>(t, out);
      break;
    case DType::kI64:
      to_float<std::int64_t>(t, out);
      break;
    case DType::kF64:
      to_float<double>(t, out);
      break;
    case DType::kF32:
      to_float<float>(t, out);
      break;
  }
  return out;
}

bool is_integer(DType d) {
  return d == DType::kU8 || d == DType::kI32 || d == DType::kI64;
}

}  // namespace

std::unique_ptr<Dataset> open_train_data(const std::string& spec,
                                         const std::string& transform) {
  if (spec.starts_with("tensors:")) {
    if (!transform.empty())
      throw ConfigError("--transform applies to image datasets, not " + spec);
    return std::make_unique<TensorFile>(spec.substr(8));
  }
  return audit::open_dataset(spec, transform);
}

ddp::Shape check_fields(const Dataset& data, const std::string& loss) {
  const SampleLayout& l = data.layout();
  if (l.num_fields() < 2)
    throw ConfigError(data.describe() + ": needs two fields (input, target), has " +
                      std::to_string(l.num_fields()));
  const FieldSpec& target = l.field(1);
  if (loss == "xent" && (!is_integer(target.dtype) || target.elements() != 1))
    throw ConfigError(data.describe() + ": --loss xent needs integer labels in field '" +
                      target.name + "', which is " + dtype_name(target.dtype));
  if (loss == "mse" && target.dtype != DType::kF32)
    throw ConfigError(data.describe() + ": --loss mse needs float32 targets in field '" +
                      target.name + "', which is " + dtype_name(target.dtype));
  if (l.field(0).variable || target.variable)
    throw ConfigError(data.describe() + ": variable-size fields cannot be trained on");
  ddp::Shape s(l.field(0).shape.begin(), l.field(0).shape.end());
  if (s.empty()) s.push_back(1);
  return s;
}

std::vector<std::int32_t> labels_of(const TensorView& t) {
  std::vector<std::int32_t> out;
  auto put = [&](auto span) {
    for (auto v : span) out.push_back(static_cast<std::int32_t>(v));
  };
  if (t.dtype == DType::kI64) put(t.values<std::int64_t>());
  if (t.dtype == DType::kI32) put(t.values<std::int32_t>());
  if (t.dtype == DType::kU8) put(t.values<std::uint8_t>());
  return out;
}

void host_inputs(const Batch& b, const std::string& loss, HostInputs& out) {
  TensorView x = b.tensor(std::size_t{0});
  out.x_shape.assign(x.shape.begin(), x.shape.end());
  if (out.x_shape.size() == 1) out.x_shape.push_back(1);
  if (x.dtype == DType::kF32) {
    out.x = x.values<float>().data();
  } else {
    out.x_copy = floats_of(x);
    out.x = out.x_copy.data();
  }
  TensorView y = b.tensor(std::size_t{1});
  out.target = Target();
  if (loss == "xent") {
    out.labels = labels_of(y);
    out.target.labels = out.labels.data();
  } else {
    out.target.values = y.values<float>().data();
  }
}

}  // namespace seedloader::train
