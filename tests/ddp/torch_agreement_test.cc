// Against PyTorch itself (skipped where /usr/bin/python3 lacks torch): the same
// parameters, loaded by nn.Sequential state_dict names with strict=True, give the
// same outputs, loss, gradients, and the same parameters after three steps of SGD
// (momentum + nesterov + weight decay; momentum + dampening) and of AdamW, so the
// momentum and bias-correction terms past the first step are compared too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/optimizer.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/ddp/test_models.h"

namespace seedloader::ddp {
namespace {

using nlohmann::json;
using testing_util::run_command;

void expect_close(const std::vector<float>& got, const json& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = want[i].get<double>();
    ASSERT_NEAR(got[i], w, tol * (1 + std::abs(w))) << what << "[" << i << "]";
  }
}

std::vector<float> slice_of(const std::vector<float>& flat, const ParamInfo& p) {
  return {flat.begin() + static_cast<std::ptrdiff_t>(p.offset),
          flat.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count)};
}

struct Case {
  bool conv;
  json layers;
};

const Case kCases[] = {
    {false, json::parse(R"([
      {"kind": "Linear", "args": [8, 16]}, {"kind": "ReLU"},
      {"kind": "Linear", "args": [16, 16]}, {"kind": "ReLU"},
      {"kind": "Linear", "args": [16, 4]}])")},
    {true, json::parse(R"([
      {"kind": "Conv2d", "args": [1, 4, 3, 1, 1]}, {"kind": "ReLU"},
      {"kind": "MaxPool2d", "args": [2]}, {"kind": "Flatten"},
      {"kind": "Linear", "args": [64, 3]}])")},
};

std::unique_ptr<Sequential> make_model(bool conv) {
  return conv ? testing_models::convnet(21) : testing_models::mlp(21);
}

// Writes a case file: the model's parameters by name, the batch and the loss.
std::string write_case(const Case& k, int index) {
  auto model = make_model(k.conv);
  testing_models::Batch batch = testing_models::make_batch(k.conv, 5, 0);
  json c;
  c["layers"] = k.layers;
  c["loss"] = k.conv ? "cross_entropy" : "mse";
  const auto params = model->parameters_to_host();
  for (const auto& p : model->param_info())
    c["state_dict"][p.name] = {{"shape", p.shape}, {"data", slice_of(params, p)}};
  c["x"] = batch.x;
  c["x_shape"] = batch.x_shape;
  c["labels"] = batch.labels;
  c["y"] = batch.y;
  const std::string path = testing_util::process_temp_dir() + "ddp_torch_case" +
                           std::to_string(index) + ".json";
  std::ofstream(path) << c.dump();
  return path;
}

void check_case(const Case& k, const json& want) {
  auto model = make_model(k.conv);
  testing_models::Batch batch = testing_models::make_batch(k.conv, 5, 0);
  const float* out = model->forward(batch.x.data(), batch.x_shape);
  const auto n_out = static_cast<std::size_t>(element_count(model->output_shape()));
  std::vector<float> grad(n_out);
  const float loss =
      k.conv ? cross_entropy_loss(model->context(), out, batch.labels.data(), grad.data(),
                                  5, 3)
             : mse_loss(model->context(), out, batch.y.data(), grad.data(), 20);
  expect_close(std::vector<float>(out, out + n_out), want["out"], 1e-5, "output");
  EXPECT_NEAR(loss, want["loss"].get<double>(), 1e-5);
  model->backward(grad.data());
  const auto grads = model->gradients_to_host();
  for (const auto& p : model->param_info())
    expect_close(slice_of(grads, p), want["grads"][p.name], 1e-5, "grad " + p.name);

  // Three steps on the same batch from a fresh model (same seed: same start).
  auto three_steps = [&](auto make_optimizer, const char* key) {
    auto m = make_model(k.conv);
    auto opt = make_optimizer(*m);
    std::vector<float> g(n_out);
    for (int step = 0; step < 3; ++step) {
      m->zero_grad();
      const float* y = m->forward(batch.x.data(), batch.x_shape);
      if (k.conv) {
        cross_entropy_loss(m->context(), y, batch.labels.data(), g.data(), 5, 3);
      } else {
        mse_loss(m->context(), y, batch.y.data(), g.data(), 20);
      }
      m->backward(g.data());
      opt->step();
    }
    const auto after = m->parameters_to_host();
    for (const auto& p : m->param_info())
      expect_close(slice_of(after, p), want[key][p.name], 1e-5,
                   std::string(key) + " " + p.name);
  };
  three_steps(
      [](Sequential& m) {
        return std::make_unique<Sgd>(m, SgdOptions{0.1f, 0.9f, 0.0f, 0.01f, true});
      },
      "sgd");
  three_steps(
      [](Sequential& m) {
        return std::make_unique<Sgd>(m, SgdOptions{0.1f, 0.9f, 0.5f, 0.0f, false});
      },
      "sgd_dampened");
  three_steps(
      [](Sequential& m) {
        AdamWOptions ao;
        ao.lr = 0.01;
        return std::make_unique<AdamW>(m, ao);
      },
      "adamw");
}

// One test for both models: a single Python start (importing torch takes seconds).
TEST(TorchAgreementTest, MlpAndConvNetMatchPyTorchForwardBackwardAndOptimizers) {
  SL_REQUIRE_PYTHON_MODULE("torch");
  std::string args;
  for (int i = 0; i < 2; ++i) args += " " + write_case(kCases[i], i);
  auto r = run_command("/usr/bin/python3 " SEEDLOADER_TORCH_REFERENCE + args);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json want = json::parse(r.out);
  ASSERT_EQ(want.size(), 2u);
  {
    SCOPED_TRACE("MLP with MSE");
    check_case(kCases[0], want[0]);
  }
  {
    SCOPED_TRACE("conv net with cross-entropy");
    check_case(kCases[1], want[1]);
  }
}

}  // namespace
}  // namespace seedloader::ddp
