// Fuzzes SafetensorsFile: the input is a whole .safetensors file (8-byte header
// length, JSON header, data). Every tensor's bytes are read, so a range the
// validation let through outside the file is a crash or a non-DataError.
#include <cstdint>

#include "loader/datasets/safetensors.h"
#include "seedloader/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string path = fuzz::scratch() + "input.safetensors";
  fuzz::write_file(path, data, size);
  try {
    SafetensorsFile file(path, /*max_header_bytes=*/1 << 20);
    std::uint64_t sum = 0;
    for (const SafetensorsTensor& t : file.tensors()) {
      if (file.find(t.name) == nullptr) __builtin_trap();
      for (std::uint8_t b : file.read(t)) sum += b;
    }
    for (const auto& [key, value] : file.metadata()) sum += key.size() + value.size();
    volatile std::uint64_t sink = sum;
    (void)sink;
  } catch (const Error&) {
  }
  return 0;
}
