// Fuzzes the seed-audit trace reader: the input is a JSONL trace file, read with
// read_trace as `seed-audit trace` does; each record's `aug` view is read through.
#include <cstdint>

#include "seedloader/error.h"
#include "tests/fuzz/fuzz_util.h"
#include "tools/seed_audit/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string path = fuzz::scratch() + "input.jsonl";
  fuzz::write_file(path, data, size);
  try {
    std::uint64_t sum = 0;
    audit::read_trace(path, [&](const audit::SampleRecord& r) {
      sum +=
          r.rank + r.epoch + r.worker + r.batch + r.index + r.rng + r.content.value_or(0);
      for (char c : r.aug) sum += static_cast<unsigned char>(c);
    });
    volatile std::uint64_t sink = sum;
    (void)sink;
  } catch (const Error&) {
  }
  return 0;
}
