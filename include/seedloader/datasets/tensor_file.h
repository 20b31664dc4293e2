// TensorFile: named tensors from a safetensors file, each shaped [N, ...]; sample i
// is row i of each. Fields are the tensors (all, sorted by name, or those named),
// each with its row shape; dtypes U8, I32, I64, F32, F64, F16, BF16 (those a
// SampleLayout holds). Rows are read with pread, straight from the page cache, which
// forked workers share. Errors: the file's own problems (a malformed or forged header,
// out-of-range offsets: DataError naming the file) and tensors that disagree on N, are
// scalars or have another dtype are DataError naming the file and the tensor; an unknown
// name is a ConfigError. Owns its mapping (in a State defined in tensor_file.cc).
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "seedloader/dataset.h"

namespace seedloader {

class TensorFile final : public Dataset {
 public:
  explicit TensorFile(std::string path, std::vector<std::string> names = {});
  ~TensorFile() override;
  TensorFile(const TensorFile&) = delete;
  TensorFile& operator=(const TensorFile&) = delete;

  std::uint64_t size() const override;
  const SampleLayout& layout() const override;
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

 private:
  struct State;
  std::unique_ptr<const State> state_;
};

}  // namespace seedloader
