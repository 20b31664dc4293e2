// Fuzzes Cifar10: the input is test_batch.bin (the one-file split); the first,
// middle and last samples are read through an empty (float) and a u8 chain.
#include <cstdint>
#include <filesystem>

#include "seedloader/datasets/cifar10.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/sample_buffer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string dir = fuzz::scratch() + "cifar";
  std::filesystem::create_directories(dir);
  fuzz::write_file(dir + "/test_batch.bin", data, size);
  try {
    Cifar10 dataset(dir, Split::kTest,
                    size % 2 ? parse_transform_spec("hflip,u8") : Compose());
    fuzz::read_samples(dataset);
  } catch (const Error&) {
  }
  return 0;
}
