// Safetensors files (the format of huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// then the data; offsets are relative to the end of the header.
//
// SafetensorsFile reads a file with pread (never a mapping, so a file truncated
// while in use is a DataError, not SIGBUS) and validates everything before it
// trusts anything: N against the file size (and a cap) before the header is
// parsed, each dtype known, shape x element size == end - begin without
// overflow, every range inside the data and no two overlapping, no name twice.
// The header is parsed one entry at a time, with containers bounded in depth
// (what the format uses) and width (64 dimensions, 4096 keys). So a forged
// header cannot cause a large allocation or an out-of-bounds read. Errors are
// DataError naming the file (and the tensor).
// write_safetensors() writes the same format (header padded with spaces to a
// multiple of 8, tensors in the given order), readable by
// safetensors.torch.load_file.
// SafetensorsFile is immutable after construction (move-only); reads are safe
// across threads and processes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/file_io.h"

namespace seedloader {

// Element size of a safetensors dtype ("F32" -> 4); 0 for an unknown name.
std::size_t safetensors_dtype_size(const std::string& dtype);

struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // "F32", "I64", "U8", ...
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0;  // byte range in the data section
  std::uint64_t end = 0;
};

class SafetensorsFile {
 public:
  static constexpr std::uint64_t kDefaultMaxHeaderBytes = 100ull << 20;

  explicit SafetensorsFile(const std::string& path,
                           std::uint64_t max_header_bytes = kDefaultMaxHeaderBytes);

  const std::string& path() const { return file_.path(); }
  // Sorted by name, whatever the header's order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // Null when there is no tensor called `name`.
  const SafetensorsTensor* find(const std::string& name) const;
  // Reads out.size() bytes of tensor t's data, from byte `offset` of it.
  // REQUIRES: offset + out.size() <= t.end - t.begin. Throws DataError naming the
  // file when it has become shorter.
  void read(const SafetensorsTensor& t, std::uint64_t offset,
            std::span<std::uint8_t> out) const;
  // All of tensor t's data.
  std::vector<std::uint8_t> read(const SafetensorsTensor& t) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  FileHandle file_;
  std::uint64_t data_start_ = 0;  // where the data section begins in the file
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// One tensor to write; `data` must hold exactly product(shape) x dtype size bytes.
struct SafetensorsWrite {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::span<const std::uint8_t> data;
};

// Writes `tensors` (and `metadata` as __metadata__) to `path`, replacing it.
// Throws ConfigError for an unknown dtype, a duplicate name or a size mismatch,
// Error naming the file and the system's reason when it cannot be written (a partly
// written file is left for the caller to remove).
void write_safetensors(const std::string& path, std::span<const SafetensorsWrite> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace seedloader
