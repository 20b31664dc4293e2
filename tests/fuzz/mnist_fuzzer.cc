// Fuzzes Mnist's IDX parsing. An even-sized input is the images file
// (t10k-images-idx3-ubyte) beside a valid labels file that claims the images'
// count; an odd-sized one is the labels file beside valid 2x2 images of the
// labels' count. Counts are capped so the valid partner stays small. Then the
// first, middle and last samples are read.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "loader/datasets/byte_order.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/sample_buffer.h"

namespace {

constexpr std::uint32_t kMaxPartnerCount = 4096;

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<std::uint8_t>(v >> shift));
}

// The count an IDX header claims (bytes 4..7), capped; 0 when there is none.
std::uint32_t claimed_count(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  return std::min(seedloader::load_be32(data + 4), kMaxPartnerCount);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string dir = fuzz::scratch() + "mnist";
  std::filesystem::create_directories(dir);
  const std::string images = dir + "/t10k-images-idx3-ubyte";
  const std::string labels = dir + "/t10k-labels-idx1-ubyte";
  const std::uint32_t count = claimed_count(data, size);
  std::vector<std::uint8_t> partner;
  if (size % 2 == 0) {
    put_be32(partner, 0x00000801);
    put_be32(partner, count);
    for (std::uint32_t i = 0; i < count; ++i) partner.push_back(i % 10);
    fuzz::write_file(images, data, size);
    fuzz::write_file(labels, partner.data(), partner.size());
  } else {
    put_be32(partner, 0x00000803);
    put_be32(partner, count);
    put_be32(partner, 2);
    put_be32(partner, 2);
    partner.resize(partner.size() + 4 * std::size_t{count}, 0x80);
    fuzz::write_file(images, partner.data(), partner.size());
    fuzz::write_file(labels, data, size);
  }
  try {
    Mnist dataset(dir, Split::kTest,
                  (size / 2) % 2 ? parse_transform_spec("resize:8x8,u8") : Compose());
    fuzz::read_samples(dataset);
  } catch (const Error&) {
  }
  return 0;
}
