// TensorFile: named tensors from a safetensors file, each shaped [N, ...]; sample i
// is row i of each. Fields are the tensors (all, in header order, or those named),
// each with its row shape; dtypes U8, I32, I64, F32, F64 (those a SampleLayout
// holds). The file is mapped read-only: rows are copied straight from the page
// cache, which forked workers share.
// Errors: the file's own problems (see safetensors.h) and tensors that disagree
// on N, are scalars or have another dtype are DataError naming the file and the
// tensor; an unknown name is a ConfigError.
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <string>
#include <vector>

#include "loader/dataset.h"
#include "loader/datasets/safetensors.h"

namespace seedloader {

class TensorFile final : public Dataset {
 public:
  explicit TensorFile(std::string path, std::vector<std::string> names = {});
  TensorFile(const TensorFile&) = delete;
  TensorFile& operator=(const TensorFile&) = delete;

  std::uint64_t size() const override { return rows_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override { return "TensorFile(" + file_.path() + ")"; }

 private:
  SafetensorsFile file_;
  std::vector<const SafetensorsTensor*> fields_;
  std::uint64_t rows_ = 0;
  SampleLayout layout_;
};

}  // namespace seedloader
