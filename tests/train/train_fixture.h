// Test fixture for ddp-train: a private temporary directory, a small regression
// data set and initial weights written as safetensors, a way to run the real
// ddp-train binary (alone or under mpirun, with a deadline) and to compare the
// tensors of two checkpoints.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "loader/datasets/safetensors.h"
#include "seedloader/pcg64_stream.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"
#include "tests/common/run_command.h"

namespace seedloader::train_test {

class TrainFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ddp_train_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // x [n, 10] and y [n, 5], normal values from a fixed stream.
  std::string write_regression_data(std::uint64_t n) {
    Rng rng{SeedSequence(42)};
    std::vector<float> x(n * 10), y(n * 5);
    for (float& v : x) v = static_cast<float>(normal(rng));
    for (float& v : y) v = static_cast<float>(normal(rng));
    std::string p = path("data.safetensors");
    std::vector<SafetensorsWrite> w{{"x", "F32", {n, 10}, bytes(x)},
                                    {"y", "F32", {n, 5}, bytes(y)}};
    write_safetensors(p, w);
    return p;
  }

  // Weights of nn.Sequential(Linear(10, 10), ReLU(), Linear(10, 5)).
  std::string write_init() {
    Rng rng{SeedSequence(7)};
    std::map<std::string, std::vector<float>> t{{"0.weight", std::vector<float>(100)},
                                                {"0.bias", std::vector<float>(10)},
                                                {"2.weight", std::vector<float>(50)},
                                                {"2.bias", std::vector<float>(5)}};
    for (auto& [name, v] : t)
      for (float& e : v) e = static_cast<float>(uniform(rng, -0.3, 0.3));
    std::vector<SafetensorsWrite> w{{"0.weight", "F32", {10, 10}, bytes(t["0.weight"])},
                                    {"0.bias", "F32", {10}, bytes(t["0.bias"])},
                                    {"2.weight", "F32", {5, 10}, bytes(t["2.weight"])},
                                    {"2.bias", "F32", {5}, bytes(t["2.bias"])}};
    std::string p = path("init.safetensors");
    write_safetensors(p, w);
    return p;
  }

  // Runs ddp-train with `args` (ranks > 0: under mpirun), stdout and stderr merged,
  // killed after 120 s.
  static testing_util::CommandResult train(const std::string& args, int ranks = 0) {
    return launch(std::string(SEEDLOADER_DDP_TRAIN) + " " + args, ranks);
  }

  // Runs `command` (a program and its arguments) as train() runs ddp-train, with
  // `mpirun_args` added to mpirun's own.
  static testing_util::CommandResult launch(const std::string& command, int ranks,
                                            const std::string& mpirun_args = "") {
    std::string launch = "ASAN_OPTIONS=detect_leaks=0 timeout -s KILL 120 ";
    if (ranks > 0)
      launch += std::string(SEEDLOADER_MPIEXEC) +
                " --allow-run-as-root --oversubscribe " + mpirun_args + " -np " +
                std::to_string(ranks) + " ";
    return testing_util::run_command(launch + command + " 2>&1");
  }

  // Largest absolute difference between same-named weights (every tensor of `a`
  // must be in `b`); 0 means bit-identical values.
  static double max_diff(const std::string& a, const std::string& b) {
    SafetensorsFile fa(a), fb(b);
    double worst = 0;
    for (const SafetensorsTensor& t : fa.tensors()) {
      const SafetensorsTensor* u = fb.find(t.name);
      EXPECT_NE(u, nullptr) << t.name;
      if (!u || t.dtype != "F32") continue;
      auto da = fa.read(t), db = fb.read(*u);
      EXPECT_EQ(da.size(), db.size()) << t.name;
      for (std::size_t i = 0; i + 4 <= std::min(da.size(), db.size()); i += 4) {
        float x, y;
        std::memcpy(&x, da.data() + i, 4);
        std::memcpy(&y, db.data() + i, 4);
        worst = std::max(worst, std::fabs(static_cast<double>(x) - y));
      }
    }
    return worst;
  }

  static bool same_bits(const std::string& a, const std::string& b) {
    SafetensorsFile fa(a), fb(b);
    if (fa.tensors().size() != fb.tensors().size()) return false;
    for (const SafetensorsTensor& t : fa.tensors()) {
      const SafetensorsTensor* u = fb.find(t.name);
      if (!u) return false;
      auto da = fa.read(t), db = fb.read(*u);
      if (da.size() != db.size() || std::memcmp(da.data(), db.data(), da.size()) != 0)
        return false;
    }
    return true;
  }

  template <typename T>
  static std::span<const std::uint8_t> bytes(const std::vector<T>& v) {
    return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(T)};
  }

 private:
  std::string dir_;
};

}  // namespace seedloader::train_test
