#include "loader/datasets/tensor_file.h"

#include <cstring>

#include "rng/error.h"

namespace seedloader {
namespace {

DType layout_dtype(const SafetensorsTensor& t, const std::string& path) {
  if (t.dtype == "U8") return DType::kU8;
  if (t.dtype == "I32") return DType::kI32;
  if (t.dtype == "I64") return DType::kI64;
  if (t.dtype == "F32") return DType::kF32;
  if (t.dtype == "F64") return DType::kF64;
  throw DataError("TensorFile(" + path + "): tensor '" + t.name + "' has dtype " +
                  t.dtype + "; U8, I32, I64, F32 or F64 expected");
}

}  // namespace

TensorFile::TensorFile(std::string path, std::vector<std::string> names) : file_(path) {
  if (names.empty()) {
    for (const auto& t : file_.tensors()) fields_.push_back(&t);
  } else {
    for (const std::string& name : names) {
      const SafetensorsTensor* t = file_.find(name);
      if (!t) throw ConfigError(describe() + ": no tensor named '" + name + "'");
      fields_.push_back(t);
    }
  }
  if (fields_.empty()) throw DataError(describe() + ": the file holds no tensors");
  std::vector<FieldSpec> specs;
  for (const SafetensorsTensor* t : fields_) {
    if (t->shape.empty()) {
      throw DataError(describe() + ": tensor '" + t->name +
                      "' is a scalar, not [N, ...]");
    }
    if (t == fields_.front()) rows_ = t->shape[0];
    if (t->shape[0] != rows_) {
      throw DataError(describe() + ": tensor '" + t->name + "' has " +
                      std::to_string(t->shape[0]) + " rows, '" + fields_.front()->name +
                      "' has " + std::to_string(rows_));
    }
    std::vector<std::int64_t> row(t->shape.begin() + 1, t->shape.end());
    specs.push_back(FieldSpec{t->name, layout_dtype(*t, file_.path()), row, false});
  }
  layout_ = SampleLayout(std::move(specs));
}

void TensorFile::get(std::uint64_t index, Rng&, SampleWriter& out) const {
  if (index >= rows_) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range (" +
                    std::to_string(rows_) + " rows)");
  }
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    std::span<std::byte> dst = out.bytes(f);
    const auto src = file_.data(*fields_[f]);
    std::memcpy(dst.data(), src.data() + index * dst.size(), dst.size());
  }
}

}  // namespace seedloader
