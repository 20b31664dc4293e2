#include "tools/ddp_train/train_data.h"

#include <glob.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include "seedloader/datasets/tensor_file.h"
#include "seedloader/error.h"
#include "tools/common/data_spec.h"
#include "tools/ddp_train/model_spec.h"

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

void hash_u64(XXH64_state_t* h, std::uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  XXH64_update(h, b, 8);
}

// (path relative to `root`, size) of the regular files under `root`, or of `root`.
void list_files(const std::filesystem::path& root,
                std::vector<std::pair<std::string, std::uint64_t>>& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    out.emplace_back(root.filename().string(), fs::file_size(root, ec));
  } else if (fs::is_directory(root, ec)) {
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->is_regular_file(ec))
        out.emplace_back(fs::relative(it->path(), root).generic_string(),
                         it->file_size(ec));
    }
  }
  if (ec) throw DataError("cannot list " + root.string() + ": " + ec.message());
}

}  // namespace

std::uint64_t data_fingerprint(const std::string& spec, const Dataset& data) {
  std::vector<std::pair<std::string, std::uint64_t>> files;
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "tar") {
    glob_t g{};
    if (::glob(arg.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) list_files(g.gl_pathv[i], files);
    ::globfree(&g);
  } else if (kind != "synthetic" && !(kind == "mix" && arg.starts_with("{"))) {
    list_files(arg, files);  // a mixture's spec file, not its sources: resumes
  }                          // compare a mixture's sources one by one
  std::sort(files.begin(), files.end());
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> h(XXH64_createState(),
                                                                      &XXH64_freeState);
  XXH64_reset(h.get(), 0);
  const std::string d = data.describe();
  XXH64_update(h.get(), d.c_str(), d.size() + 1);
  hash_u64(h.get(), data.size());
  for (const auto& [name, size] : files) {
    XXH64_update(h.get(), name.c_str(), name.size() + 1);
    hash_u64(h.get(), size);
  }
  return XXH64_digest(h.get());
}

std::unique_ptr<Dataset> open_train_data(const std::string& spec,
                                         const std::string& transform) {
  if (spec.starts_with("tensors:")) {
    if (!transform.empty())
      throw ConfigError("--transform applies to image datasets, not " + spec);
    return std::make_unique<TensorFile>(spec.substr(8));
  }
  return tools::open_dataset(spec, transform);
}

ddp::Shape check_fields(const Dataset& data, Loss loss) {
  const SampleLayout& l = data.layout();
  if (l.num_fields() < 2)
    throw ConfigError(data.describe() + ": needs two fields (input, target), has " +
                      std::to_string(l.num_fields()));
  const FieldSpec& target = l.field(1);
  if (loss == Loss::kXent && (!is_integer(target.dtype) || target.elements() != 1))
    throw ConfigError(data.describe() + ": --loss xent needs integer labels in field '" +
                      target.name + "', which is " + dtype_name(target.dtype));
  if (loss == Loss::kMse && target.dtype != DType::kF32)
    throw ConfigError(data.describe() + ": --loss mse needs float32 targets in field '" +
                      target.name + "', which is " + dtype_name(target.dtype));
  if (l.field(0).variable || target.variable)
    throw ConfigError(data.describe() + ": variable-size fields cannot be trained on");
  ddp::Shape s(l.field(0).shape.begin(), l.field(0).shape.end());
  if (s.empty()) s.push_back(1);
  return s;
}

std::int64_t model_classes(const std::string& model_spec, const ddp::Shape& sample) {
  ddp::Shape shape{1};
  shape.insert(shape.end(), sample.begin(), sample.end());
  for (const auto& layer : build_layers(model_spec, sample)) {
    shape = layer->output_shape(shape);
  }
  return ddp::element_count(shape);
}

std::vector<std::int32_t> labels_of(const TensorView& t,
                                    std::span<const std::uint64_t> indices,
                                    std::int64_t classes, const std::string& who) {
  std::vector<std::int32_t> out;
  auto put = [&](auto span) {
    for (auto v : span) {
      const std::int64_t label = static_cast<std::int64_t>(v);
      if (label < 0 || label >= classes || label > INT32_MAX) {
        const std::size_t row = out.size();
        throw DataError(who + ": sample " +
                        (row < indices.size() ? std::to_string(indices[row])
                                              : "at row " + std::to_string(row)) +
                        ": label " + std::to_string(label) +
                        " is outside the model's classes [0, " + std::to_string(classes) +
                        ")");
      }
      out.push_back(static_cast<std::int32_t>(label));
    }
  };
  if (t.dtype == DType::kI64) put(t.values<std::int64_t>());
  if (t.dtype == DType::kI32) put(t.values<std::int32_t>());
  if (t.dtype == DType::kU8) put(t.values<std::uint8_t>());
  return out;
}

void host_inputs(const Batch& b, Loss loss, std::int64_t classes, const std::string& who,
                 HostInputs& out) {
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
  if (loss == Loss::kXent) {
    out.labels = labels_of(y, b.indices(), classes, who);
    out.target.labels = out.labels.data();
  } else {
    out.target.values = y.values<float>().data();
  }
}

}  // namespace seedloader::train
