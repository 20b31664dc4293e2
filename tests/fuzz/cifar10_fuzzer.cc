// Fuzzes Cifar10 in both layouts. An input that starts with PROTO 2 (0x80 0x02)
// is a pickled file of cifar-10-batches-py: batches.meta when it mentions
// label_names, else test_batch, with a valid companion file beside it. Any
// other input is test_batch.bin of the binary layout. The first, middle and last
// samples are read through an empty (float) and a u8 chain.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "seedloader/datasets/cifar10.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/datasets/cifar_pickle_writer.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/sample_buffer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const bool pickled = size >= 2 && data[0] == 0x80 && data[1] == 2;
  const std::string dir = fuzz::scratch() + (pickled ? "cifar-py" : "cifar");
  std::filesystem::create_directories(dir);
  if (pickled) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const bool meta = text.find("label_names") != std::string_view::npos;
    const std::vector<std::uint8_t> other =
        meta ? testing::cifar_pickle_batch({}) : testing::cifar_pickle_meta();
    fuzz::write_file(dir + (meta ? "/batches.meta" : "/test_batch"), data, size);
    fuzz::write_file(dir + (meta ? "/test_batch" : "/batches.meta"), other.data(),
                     other.size());
  } else {
    fuzz::write_file(dir + "/test_batch.bin", data, size);
  }
  try {
    Cifar10 dataset(dir, Split::kTest,
                    size % 2 ? parse_transform_spec("hflip,u8") : Compose());
    fuzz::read_samples(dataset);
  } catch (const Error&) {
  }
  return 0;
}
