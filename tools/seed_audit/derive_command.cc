// seed-audit derive: print the spawn key, state words and first outputs of one
// stream, to compare against numpy.
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "tools/common/number_checks.h"
#include "tools/seed_audit/commands.h"

namespace seedloader::audit {
namespace {

struct DeriveArgs {
  std::uint64_t seed = 0;
  std::string purpose = "worker";
  std::uint64_t epoch = 0;
  std::uint64_t rank = 0;
  std::uint64_t worker = 0;
  std::uint64_t index = 0;
  std::uint64_t count = 4;
  bool json = false;
};

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
  return buf;
}

int run_derive(const DeriveArgs& a) {
  std::vector<std::uint64_t> key;
  if (a.purpose == "shuffle") {
    key = shuffle_key(a.epoch);
  } else if (a.purpose == "worker") {
    key = worker_key(a.epoch, a.rank, a.worker);
  } else {
    key = sample_key(a.epoch, a.index);
  }
  SeedSequence seq(a.seed, key);
  std::vector<std::uint64_t> state = seq.generate_state_u64(4);
  Pcg64Stream stream(seq);
  std::vector<std::string> outputs;
  for (std::uint64_t i = 0; i < a.count; ++i) outputs.push_back(hex(stream.next_u64()));

  if (a.json) {
    nlohmann::json j;
    j["spawn_key"] = key;
    j["state"] = nlohmann::json::array();
    for (std::uint64_t s : state) j["state"].push_back(hex(s));
    j["outputs"] = outputs;
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  std::cout << "base seed: " << a.seed << "\nspawn key: (";
  for (std::size_t i = 0; i < key.size(); ++i) std::cout << (i ? ", " : "") << key[i];
  std::cout << ")\nstate:    ";
  for (std::uint64_t s : state) std::cout << " " << hex(s);
  std::cout << "\noutputs:\n";
  for (const std::string& o : outputs) std::cout << "  " << o << "\n";
  std::cout << "numpy:     np.random.PCG64(np.random.SeedSequence(" << a.seed
            << ", spawn_key=(";
  for (std::size_t i = 0; i < key.size(); ++i) std::cout << (i ? ", " : "") << key[i];
  std::cout << (key.size() == 1 ? ",)" : ")") << ")).random_raw(" << a.count << ")\n";
  return kExitOk;
}

}  // namespace

void add_derive_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<DeriveArgs>();
  CLI::App* cmd = app.add_subcommand(
      "derive",
      "Print the spawn key, the four uint64 state words and the first raw outputs of\n"
      "one of seedloader's streams. numpy gives the same numbers with\n"
      "np.random.PCG64(np.random.SeedSequence(SEED, spawn_key=KEY)).random_raw(N).");
  cmd->add_option("--seed", args->seed, "Base seed")
      ->check(tools::non_negative_integer())
      ->required();
  cmd->add_option("--purpose", args->purpose,
                  "Which stream: shuffle (0,epoch), worker (1,epoch,rank,worker) or "
                  "sample (2,epoch,index)")
      ->check(CLI::IsMember({"shuffle", "worker", "sample"}))
      ->capture_default_str();
  cmd->add_option("--epoch", args->epoch, "Epoch")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_option("--rank", args->rank, "Rank (worker streams)")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_option("--worker", args->worker, "Worker id (worker streams)")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_option("--index", args->index, "Sample index (sample streams)")
      ->check(tools::non_negative_integer())
      ->capture_default_str();
  cmd->add_option("--count", args->count, "How many raw 64-bit outputs to print")
      ->check(tools::non_negative_integer())
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 20))
      ->capture_default_str();
  cmd->add_flag("--json", args->json,
                "Print {\"spawn_key\":[...],\"state\":[...],\"outputs\":[...]}");
  cmd->callback([args, &action] { action = [args] { return run_derive(*args); }; });
}

}  // namespace seedloader::audit
