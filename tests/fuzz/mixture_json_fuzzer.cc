// Fuzzes the mixture JSON that seed-audit, ddp-train and the Python package read:
// the input is parsed as a mix: spec (parse_mix_spec, its schedule then built and
// allocated a few steps, as open_dataset would, with no data set opened) and as a
// mixture state (parse_mixture_state, as --mixture and ddp-train's checkpoint
// metadata are read; mixture_expectation, as trace --mixture and the Python
// audit read it). Nesting is bounded (base/json_depth.h): a document
// nested tens of thousands deep is a refusal, never a stack overflow
// (corpus/mixture_json_fuzzer/regress_deep_nesting), and a count that is a float
// beyond 2^64 or negative is refused, never converted
// (corpus/mixture_json_fuzzer/regress_float_count).
#include <cstdint>
#include <string>

#include "seedloader/error.h"
#include "seedloader/mixture.h"
#include "seedloader/mixture_state_json.h"
#include "tools/common/data_spec.h"
#include "tools/seed_audit/mixture_composition.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace seedloader;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    tools::MixSpec mix = tools::parse_mix_spec("fuzz", text);
    MixtureAllocation allocation(
        MixtureSchedule(mix.names, std::move(mix.points), mix.interpolate), 4);
    allocation.advance_to(8);
  } catch (const Error&) {
  }
  try {
    const MixtureState state = parse_mixture_state("fuzz", text);
    (void)mixture_state_json(state);
  } catch (const Error&) {
  }
  try {
    (void)audit::mixture_expectation("fuzz", text, 4);
  } catch (const Error&) {
  }
  return 0;
}
