#include "seedloader/datasets/tensor_file.h"

#include "loader/datasets/safetensors.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

DType layout_dtype(const SafetensorsTensor& t, const std::string& path) {
  if (t.dtype == "U8") return DType::kU8;
  if (t.dtype == "BOOL") return DType::kBool;
  if (t.dtype == "I8") return DType::kI8;
  if (t.dtype == "I16") return DType::kI16;
  if (t.dtype == "I32") return DType::kI32;
  if (t.dtype == "I64") return DType::kI64;
  if (t.dtype == "F32") return DType::kF32;
  if (t.dtype == "F64") return DType::kF64;
  if (t.dtype == "F16") return DType::kF16;
  if (t.dtype == "BF16") return DType::kBF16;
  throw DataError("TensorFile(" + path + "): tensor '" + t.name + "' has dtype " +
                  t.dtype +
                  "; BOOL, U8, I8, I16, I32, I64, F32, F64, F16 or BF16 expected");
}

}  // namespace

struct TensorFile::State {
  explicit State(const std::string& path) : file(path) {}

  SafetensorsFile file;
  std::vector<const SafetensorsTensor*> fields;  // into file's tensors
  std::uint64_t rows = 0;
  SampleLayout layout;
};

TensorFile::TensorFile(std::string path, std::vector<std::string> names) {
  auto s = std::make_unique<State>(path);
  const std::string describe = "TensorFile(" + s->file.path() + ")";
  if (names.empty()) {
    for (const auto& t : s->file.tensors()) s->fields.push_back(&t);
  } else {
    for (const std::string& name : names) {
      const SafetensorsTensor* t = s->file.find(name);
      if (!t) throw ConfigError(describe + ": no tensor named '" + name + "'");
      s->fields.push_back(t);
    }
  }
  if (s->fields.empty()) throw DataError(describe + ": the file holds no tensors");
  std::vector<FieldSpec> specs;
  for (const SafetensorsTensor* t : s->fields) {
    if (t->shape.empty()) {
      throw DataError(describe + ": tensor '" + t->name + "' is a scalar, not [N, ...]");
    }
    if (t == s->fields.front()) s->rows = t->shape[0];
    if (t->shape[0] != s->rows) {
      throw DataError(describe + ": tensor '" + t->name + "' has " +
                      std::to_string(t->shape[0]) + " rows, '" + s->fields.front()->name +
                      "' has " + std::to_string(s->rows));
    }
    std::vector<std::int64_t> row(t->shape.begin() + 1, t->shape.end());
    specs.push_back(FieldSpec{t->name, layout_dtype(*t, s->file.path()), row, false});
  }
  s->layout = SampleLayout(std::move(specs));
  state_ = std::move(s);
}

TensorFile::~TensorFile() = default;

std::uint64_t TensorFile::size() const { return state_->rows; }

const SampleLayout& TensorFile::layout() const { return state_->layout; }

std::string TensorFile::describe() const {
  return "TensorFile(" + state_->file.path() + ")";
}

void TensorFile::get(std::uint64_t index, Rng&, SampleWriter& out) const {
  const State& s = *state_;
  if (index >= s.rows) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range (" +
                    std::to_string(s.rows) + " rows)");
  }
  for (std::size_t f = 0; f < s.fields.size(); ++f) {
    std::span<std::byte> dst = out.bytes(f);
    try {
      // Straight into the slot: pread of this row only, no mapping to fault on.
      s.file.read(*s.fields[f], index * dst.size(),
                  {reinterpret_cast<std::uint8_t*>(dst.data()), dst.size()});
    } catch (const DataError& e) {
      throw DataError(describe() + ": sample " + std::to_string(index) + ": " + e.what());
    }
  }
}

}  // namespace seedloader
