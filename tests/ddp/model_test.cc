// Sequential (flat buffers, names, initialisation), losses and optimizers on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "ddp/cpu_kernels.h"
#include "seedloader/ddp/layers.h"
#include "seedloader/ddp/loss.h"
#include "seedloader/ddp/optimizer.h"
#include "seedloader/ddp/sequential.h"
#include "seedloader/error.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"
#include "tests/ddp/test_models.h"

namespace seedloader::ddp {
namespace {

std::unique_ptr<Sequential> make_mlp(std::uint64_t seed) {
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Linear>(6, 8));
  layers.push_back(std::make_unique<ReLU>());
  layers.push_back(std::make_unique<Linear>(8, 3));
  Rng rng{SeedSequence(seed)};
  return std::make_unique<Sequential>(std::move(layers), Device::kCpu, rng);
}

TEST(SequentialTest, ParametersAreNamedLikePyTorchStateDict) {
  auto model = make_mlp(1);
  const auto& info = model->param_info();
  ASSERT_EQ(info.size(), 4u);
  EXPECT_EQ(info[0].name, "0.weight");
  EXPECT_EQ(info[1].name, "0.bias");
  EXPECT_EQ(info[2].name, "2.weight");
  EXPECT_EQ(info[3].name, "2.bias");
  EXPECT_EQ(info[0].shape, (Shape{8, 6}));
  EXPECT_EQ(info[3].shape, (Shape{3}));
}

TEST(SequentialTest, ParametersAreContiguousInOneFlatBuffer) {
  auto model = make_mlp(1);
  std::size_t next = 0;
  for (const auto& p : model->param_info()) {
    EXPECT_EQ(p.offset, next) << p.name;
    next += p.count;
  }
  EXPECT_EQ(model->parameters().size(), next);
  EXPECT_EQ(model->gradients().size(), next);
}

TEST(SequentialTest, InitialisationIsKaimingUniformWithinOneOverSqrtFanIn) {
  auto model = make_mlp(7);
  auto host = model->parameters_to_host();
  for (const auto& p : model->param_info()) {
    const double fan_in = p.shape.size() == 2 ? p.shape[1] : (p.name[0] == '0' ? 6 : 8);
    const double bound = 1.0 / std::sqrt(fan_in);
    double max_abs = 0;
    for (std::size_t i = 0; i < p.count; ++i) {
      EXPECT_LE(std::abs(host[p.offset + i]), bound) << p.name;
      max_abs = std::max(max_abs, std::abs(double(host[p.offset + i])));
    }
    if (p.count > 20) EXPECT_GT(max_abs, 0.5 * bound) << p.name << " spans its range";
  }
}

TEST(SequentialTest, SameSeedGivesSameParametersAndOtherSeedDiffers) {
  EXPECT_EQ(make_mlp(3)->parameters_to_host(), make_mlp(3)->parameters_to_host());
  EXPECT_NE(make_mlp(3)->parameters_to_host(), make_mlp(4)->parameters_to_host());
}

TEST(SequentialTest, ShapeMismatchIsConfigError) {
  auto model = make_mlp(1);
  std::vector<float> x(10);
  EXPECT_THROW(model->forward(x.data(), {2, 5}), ConfigError);
}

TEST(SequentialTest, BackwardMatchesKernelComposition) {
  auto model = make_mlp(2);
  Rng rng{SeedSequence(9)};
  std::vector<float> x(4 * 6), target(4 * 3), dy(4 * 3);
  for (auto& v : x) v = static_cast<float>(normal(rng));
  for (auto& v : target) v = static_cast<float>(normal(rng));
  const float* y = model->forward(x.data(), {4, 6});
  mse_loss(model->context(), y, target.data(), dy.data(), 12);
  model->backward(dy.data());
  auto p = model->parameters_to_host();
  auto g = model->gradients_to_host();
  // Recompute by hand in double with the same kernels.
  std::vector<double> xd(x.begin(), x.end()), pd(p.begin(), p.end());
  std::vector<double> h(32), a(32), yd(12), dyd(12), gd(p.size(), 0), da(32), dh(32);
  const double* w0 = pd.data();
  const double* b0 = w0 + 48;
  const double* w1 = b0 + 8;
  const double* b1 = w1 + 24;
  cpu::linear_forward(xd.data(), w0, b0, h.data(), 4, 6, 8);
  cpu::relu_forward(h.data(), a.data(), 32);
  cpu::linear_forward(a.data(), w1, b1, yd.data(), 4, 8, 3);
  std::vector<double> td(target.begin(), target.end());
  cpu::mse_loss(yd.data(), td.data(), dyd.data(), 12);
  cpu::linear_backward(a.data(), w1, dyd.data(), gd.data() + 56, gd.data() + 80,
                       da.data(), 4, 8, 3);
  cpu::relu_backward(h.data(), da.data(), dh.data(), 32);
  cpu::linear_backward(xd.data(), w0, dh.data(), gd.data(), gd.data() + 48,
                       static_cast<double*>(nullptr), 4, 6, 8);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], gd[i], 1e-5) << i;
}

TEST(SequentialTest, ConvModelOutputShapeFollowsLayers) {
  auto model = testing_models::convnet(1);
  std::vector<float> x(2 * 64, 0.5f);
  model->forward(x.data(), {2, 1, 8, 8});
  EXPECT_EQ(model->output_shape(), (Shape{2, 3}));
  EXPECT_EQ(model->param_info()[2].name, "4.weight");
}

TEST(OptimizerTest, SgdWithMomentumNesterovAndWeightDecayFollowsPyTorchFormulas) {
  auto model = make_mlp(1);
  SgdOptions o{0.1f, 0.9f, 0.0f, 0.01f, true};
  Sgd sgd(*model, o);
  auto p = model->parameters_to_host();
  std::vector<double> pd(p.begin(), p.end()), buf(p.size());
  for (int step = 0; step < 3; ++step) {
    auto g = model->gradients();
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.01f * float(i % 7) - 0.03f;
    for (std::size_t i = 0; i < g.size(); ++i) {
      double d = g[i] + 0.01 * pd[i];
      buf[i] = step == 0 ? d : 0.9 * buf[i] + d;
      d = d + 0.9 * buf[i];
      pd[i] -= 0.1 * d;
    }
    sgd.step();
  }
  auto after = model->parameters_to_host();
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], pd[i], 1e-6);
}

TEST(OptimizerTest, AdamWFollowsPyTorchFormulas) {
  auto model = make_mlp(1);
  AdamWOptions o;
  o.lr = 0.01;
  AdamW adam(*model, o);
  auto p = model->parameters_to_host();
  std::vector<double> pd(p.begin(), p.end()), m(p.size()), v(p.size());
  for (int t = 1; t <= 3; ++t) {
    auto g = model->gradients();
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = 0.02f * float(i % 5) - 0.04f * t;
    for (std::size_t i = 0; i < g.size(); ++i) {
      pd[i] *= 1 - 0.01 * 0.01;
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * double(g[i]) * g[i];
      const double bc1 = 1 - std::pow(0.9, t), bc2 = 1 - std::pow(0.999, t);
      pd[i] -= (0.01 / bc1) * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + 1e-8);
    }
    adam.step();
  }
  auto after = model->parameters_to_host();
  for (std::size_t i = 0; i < after.size(); ++i) EXPECT_NEAR(after[i], pd[i], 1e-6);
}

TEST(OptimizerTest, InvalidOptionsAreConfigErrors) {
  auto model = make_mlp(1);
  EXPECT_THROW(Sgd(*model, SgdOptions{0.1f, 0.0f, 0.0f, 0.0f, true}), ConfigError);
  AdamWOptions bad;
  bad.beta1 = 1.0;
  EXPECT_THROW(AdamW(*model, bad), ConfigError);
}

TEST(TrainingTest, CrossEntropyTrainingLowersTheLoss) {
  auto model = make_mlp(5);
  Rng rng{SeedSequence(11)};
  std::vector<float> x(32 * 6), dz(32 * 3);
  std::vector<int32_t> labels(32);
  for (int s = 0; s < 32; ++s) {
    labels[s] = static_cast<int32_t>(bounded(rng, 3));
    for (int f = 0; f < 6; ++f)
      x[s * 6 + f] =
          static_cast<float>(normal(rng)) * 0.3f + (f == labels[s] ? 1.5f : 0.f);
  }
  Sgd sgd(*model, SgdOptions{0.5f, 0.9f});
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    model->zero_grad();
    const float* z = model->forward(x.data(), {32, 6});
    last = cross_entropy_loss(model->context(), z, labels.data(), dz.data(), 32, 3);
    if (step == 0) first = last;
    model->backward(dz.data());
    sgd.step();
  }
  EXPECT_LT(last, 0.25f * first);
}

TEST(LossTest, CrossEntropyRejectsLabelOutOfRange) {
  ExecContext cpu;
  std::vector<float> z(6), dz(6);
  std::vector<int32_t> labels = {0, 3};
  EXPECT_THROW(cross_entropy_loss(cpu, z.data(), labels.data(), dz.data(), 2, 3),
               DataError);
}

}  // namespace
}  // namespace seedloader::ddp
